/**
 * The validation gate's launcher side (issue 14 §2), one per running provider whose targets
 * have `validate:`: for each `validating` upload of the provider it takes the upload's
 * validation lock (so one host validates it), boots a validation node from exactly that upload
 * through the provider's own RequestHandler, checks SSH (the host key the launch recorded, and
 * `command` with exit 0) and then marks the upload ready, or failed with the reason and its image
 * deleted in the provider. The node is handed to the deleter either way.
 *
 * The timeout counts from when the upload entered `validating`, so a restart does not restart
 * the clock: a restarted launcher discards the validation node of the one before it, boots a new
 * one if time remains, else fails the upload as timed out. Woken by the store's change
 * notification, with a periodic pass as the fallback.
 */
import type { ProviderConfig } from '../../lib/drivers/config-registry.js';
import { imageTarget, providerPools } from '../../lib/drivers/config-registry.js';
import type { Provider } from '../../lib/drivers/contract/driver.js';
import type { ValidationSpec } from '../../lib/drivers/contract/validate-config.js';
import { coerceError, HostScanError, StateConflictError } from '../../lib/errors.js';
import { sleep } from '../../lib/lifecycle.js';
import type { Logger } from '../../lib/log.js';
import { PeriodicLoop } from '../../lib/periodic-loop.js';
import { hostKeyMismatch } from '../../lib/ssh/host-keys.js';
import { keyscan } from '../../lib/ssh/keyscan.js';
import { runSshCommand } from '../../lib/ssh/ssh-command.js';
import { nodeLock, uploadValidationLock } from '../../lib/store/lock-names.js';
import { validationAllocation, type NodeRecord, type UploadRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import { validationDeadline } from '../image-lifecycle/validating.js';
import { lockIfFree } from './lock-if-free.js';
import {
  bootFailure, commandFailure, timedOut, validationRequest, validationUser, validatorId,
} from './validation-decisions.js';

/** What a validation worker needs. */
export interface ValidationWorkerDeps {
  store: Store;
  log: Logger;
  provider: Provider;
  /** The provider's config as the launcher runs it. */
  config: ProviderConfig;
  /** The process's store session (read at each use). */
  sessionId: () => string;
  hostname: string;
  pid: number;
  /** Longest wait between passes (default 30 s); store changes wake it sooner. */
  intervalMs?: number;
  /** How often a booting validation node's record is read (default 2 s). */
  pollMs?: number;
  clock?: () => number;
  onLoopPass?: () => void;
}

/** How a validation ended here. */
type Verdict = { pass: true } | { pass: false; reason: string } | { retry: string };

/** SSH attempts for the command when ssh itself fails (exit 255: sshd not fully up yet). */
const SSH_ATTEMPTS = 3;

export class ValidationWorker {
  readonly loop: PeriodicLoop;
  private readonly log: Logger;
  private readonly tasks = new Map<string, Promise<void>>();
  private readonly abort = new AbortController();
  private readonly clock: () => number;
  private stopping: Promise<void> | undefined;

  constructor(private readonly deps: ValidationWorkerDeps) {
    this.log = deps.log.child({ component: 'validation-worker', provider: deps.provider.name });
    this.clock = deps.clock ?? Date.now;
    this.loop = new PeriodicLoop({
      name: `validation:${deps.provider.name}`, log: this.log, intervalMs: () => deps.intervalMs ?? 30_000,
      pass: () => this.pass(), backoff: { initialMs: 1000, maxMs: 30_000 },
      ...(deps.onLoopPass ? { onPass: deps.onLoopPass } : {}),
    });
  }

  start(): void {
    this.loop.start();
  }

  /** The store changed (maybe an upload entered validating): look now. */
  nudge(): void {
    if (!this.stopping) this.loop.nudge();
  }

  /**
   * Stops: validations in progress are abandoned (their uploads stay `validating`, their nodes
   * go to the deleter, their locks are released) for the next start, or another host, to resume.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.abort.abort(new Error(`validation worker of ${this.deps.provider.name} is stopping`));
      await this.loop.stop();
      await Promise.allSettled([...this.tasks.values()]);
    })();
    return this.stopping;
  }

  /** Starts a validation for each validating upload of the provider that has none here. */
  async pass(): Promise<boolean> {
    const uploads = await this.deps.store.listUploads({ provider: this.deps.provider.name, states: ['validating'] });
    for (const u of uploads) {
      if (this.tasks.has(u.id) || this.abort.signal.aborted) continue;
      const spec = this.spec(u);
      if (!spec) continue; // the planner resolves it (target gone or no longer validated)
      const task = this.validate(u, spec)
        .catch((err: unknown) => {
          this.log.warn('validation attempt failed; the next pass retries', { uploadId: u.id, error: coerceError(err).message });
        })
        .finally(() => this.tasks.delete(u.id));
      this.tasks.set(u.id, task);
    }
    return false;
  }

  /** Resolves when every validation started so far has ended (tests). */
  async settled(): Promise<void> {
    while (this.tasks.size) await Promise.allSettled([...this.tasks.values()]);
  }

  private spec(u: UploadRecord): ValidationSpec | null {
    return imageTarget(this.deps.config, u.imageName)?.validate ?? null;
  }

  /** One validation under the upload's lock. */
  private async validate(upload: UploadRecord, spec: ValidationSpec): Promise<void> {
    const { store } = this.deps;
    const sessionId = this.deps.sessionId();
    const lock = uploadValidationLock(upload.id);
    if (!await lockIfFree(store, lock, sessionId)) return; // another host (or a lapsing session) has it
    const log = this.log.child({ uploadId: upload.id });
    try {
      const fresh = await store.getUpload(upload.id);
      if (fresh?.state !== 'validating') return;
      await this.discardStaleNodes(fresh.id, sessionId, log);
      const deadline = validationDeadline(fresh.stateTime, spec);
      if (this.clock() >= deadline) {
        await this.fail(fresh, timedOut(spec.timeout, 'no validation node had passed'), log);
        return;
      }
      await this.bootAndCheck(fresh, spec, deadline, sessionId, log);
    } finally {
      await store.unlock(lock, sessionId).catch(() => undefined);
    }
  }

  /** Validation nodes of this upload left by an earlier attempt (a crash, a stop) go to the deleter. */
  private async discardStaleNodes(uploadId: string, sessionId: string, log: Logger): Promise<void> {
    const { store } = this.deps;
    for (const n of await store.listNodes({ allocatedTo: validationAllocation(uploadId) })) {
      if (n.state === 'deleting' || n.state === 'hold') continue;
      if (!await lockIfFree(store, nodeLock(n.id), sessionId)) continue; // the deleter has it already
      try {
        await store.updateNode(n.id, { state: 'deleting', reason: 'validation node of an earlier attempt' });
        log.info('discarding the validation node of an earlier attempt', { node: n.id, was: n.state });
      } finally {
        await store.unlock(nodeLock(n.id), sessionId);
      }
    }
  }

  private async bootAndCheck(upload: UploadRecord, spec: ValidationSpec, deadline: number, sessionId: string, log: Logger): Promise<void> {
    const { store, provider } = this.deps;
    const pool = providerPools(this.deps.config).find((p) => p.name === spec.pool);
    if (!pool) throw new Error(`provider ${provider.name} has no pool ${spec.pool}`);
    const handler = provider.getRequestHandler(spec.pool, validationRequest(upload.id, provider.name, spec.label, this.clock()));
    const created = await store.createNode({
      state: 'init', provider: provider.name, pool: spec.pool, labels: [spec.label],
      launcher: validatorId(this.deps.hostname, this.deps.pid, provider.name), allocatedTo: validationAllocation(upload.id),
      validatesUpload: upload.id, image: upload.id, attributes: { ...pool.nodeAttributes }, ...handler.nodeMetadata(spec.label),
    });
    await store.tryLock(nodeLock(created.id), sessionId);
    let verdict: Verdict = { retry: 'stopped' };
    try {
      const building = await store.updateNode(created.id, { state: 'building' }, { expectStates: ['init'] });
      if (!building) return;
      await this.note(upload.id, `validating: booting node ${created.id} (label ${spec.label})`);
      log.info('booting a validation node', { node: created.id, label: spec.label, pool: spec.pool, deadlineInMs: deadline - this.clock() });
      handler.launch(building);
      verdict = await this.judge(upload, spec, created.id, deadline, log);
    } finally {
      const why = 'pass' in verdict ? (verdict.pass ? 'validation passed' : 'validation failed') : `validation attempt ended: ${verdict.retry}`;
      await store.updateNode(created.id, { state: 'deleting', reason: why }).catch(() => undefined);
      await store.unlock(nodeLock(created.id), sessionId).catch(() => undefined);
    }
    if (!('pass' in verdict)) {
      log.info('validation attempt ended without a verdict; the next pass tries again', { node: created.id, why: verdict.retry });
      return;
    }
    if (verdict.pass) await this.markReady(upload, log);
    else await this.fail(upload, verdict.reason, log);
  }

  /** Waits for the node's launch, then checks SSH; every step bounded by the deadline. */
  private async judge(upload: UploadRecord, spec: ValidationSpec, nodeId: string, deadline: number, log: Logger): Promise<Verdict> {
    const { store } = this.deps;
    const signal = this.abort.signal;
    let node: NodeRecord | undefined;
    for (;;) {
      if (signal.aborted) return { retry: 'the worker is stopping' };
      node = await store.getNode(nodeId);
      if (!node) return { retry: `node ${nodeId} vanished` };
      if (node.state !== 'building') break;
      if ((await store.getUpload(upload.id))?.state !== 'validating') return { retry: 'the upload is no longer validating' };
      if (this.clock() >= deadline) return { pass: false, reason: timedOut(spec.timeout, `node ${nodeId} was still booting`) };
      await sleep(Math.min(this.deps.pollMs ?? 2000, Math.max(1, deadline - this.clock())), signal).catch(() => undefined);
    }
    if (node.state === 'aborted') return { retry: `node ${nodeId} was aborted (${node.reason ?? 'over quota'})` };
    if (node.state !== 'ready') return { pass: false, reason: bootFailure(node) };
    log.info('validation node is up; checking SSH', { node: nodeId, ip: node.interfaceIp, port: node.connectionPort, hostKeys: node.hostKeys.length });
    await this.note(upload.id, `validating: node ${nodeId} booted; checking SSH`);
    return this.checkSsh(node, spec, deadline, log);
  }

  /** The host key the launch recorded must answer, and the command (if any) must exit 0. */
  private async checkSsh(node: NodeRecord, spec: ValidationSpec, deadline: number, log: Logger): Promise<Verdict> {
    const host = node.interfaceIp;
    if (!host) return { pass: false, reason: `validation: node ${node.id} is ready but has no address` };
    const signal = this.abort.signal;
    const remaining = (): number => deadline - this.clock();
    if (spec.command === null) {
      // With no recorded keys (host-key-checking off) the launch's own key scan was the check.
      if (node.hostKeys.length === 0) return { pass: true };
      try {
        const scanned = await keyscan(host, node.connectionPort, { timeoutMs: Math.max(1000, Math.min(remaining(), 60_000)), signal });
        const mismatch = hostKeyMismatch(node.hostKeys, scanned);
        return mismatch ? { pass: false, reason: `validation: node ${node.id}: ${mismatch}` } : { pass: true };
      } catch (err) {
        if (signal.aborted) return { retry: 'the worker is stopping' };
        if (err instanceof HostScanError) return { pass: false, reason: `validation: node ${node.id} stopped answering SSH: ${err.message}` };
        throw err;
      }
    }
    const user = validationUser(spec, node);
    if (user === null) return { pass: false, reason: `validation: no user to run the command as on node ${node.id}: set validate.username` };
    for (let attempt = 1; ; attempt++) {
      if (remaining() <= 0) return { pass: false, reason: timedOut(spec.timeout, `the command had not run on node ${node.id}`) };
      let result;
      try {
        result = await runSshCommand({
          host, port: node.connectionPort, user, privateKey: spec.privateKey, hostKeys: node.hostKeys, command: spec.command,
          timeoutMs: remaining(), signal,
        });
      } catch (err) {
        if (signal.aborted) return { retry: 'the worker is stopping' };
        throw err;
      }
      const failure = commandFailure(spec.command, result, spec.timeout);
      log.info('validation command ran', { node: node.id, attempt, exitCode: result.exitCode, timedOut: result.timedOut });
      if (failure === null) return { pass: true };
      if (result.exitCode !== 255 || attempt >= SSH_ATTEMPTS || remaining() < 10_000) return { pass: false, reason: failure };
      log.info('ssh failed; trying again', { node: node.id, attempt, output: result.outputTail.slice(-300) });
      await sleep(5000, signal).catch(() => undefined);
    }
  }

  /** A progress note on the validating upload (its `reason`); stateTime, the clock's start, is unchanged. */
  private async note(uploadId: string, text: string): Promise<void> {
    await this.deps.store.updateUpload(uploadId, { reason: text }, { expectStates: ['validating'] }).catch(() => undefined);
  }

  private async markReady(upload: UploadRecord, log: Logger): Promise<void> {
    const ready = await this.settle(this.deps.store.updateUpload(upload.id, { state: 'ready', reason: null }, { expectStates: ['validating'] }));
    if (ready) log.info('upload validated: ready for launches', { provider: upload.provider, externalId: upload.externalId });
  }

  /** Marks the upload failed with the reason (kept until retention prunes it), then deletes its image in the provider. */
  private async fail(upload: UploadRecord, reason: string, log: Logger): Promise<void> {
    const failed = await this.settle(this.deps.store.updateUpload(upload.id, { state: 'failed', reason, progress: null }, { expectStates: ['validating'] }));
    if (!failed) return;
    log.warn('upload failed validation', { provider: upload.provider, externalId: upload.externalId, reason: reason.slice(0, 500) });
    if (!failed.externalId) return;
    try {
      if (!this.deps.provider.images) throw new Error(`provider ${upload.provider} has no image service`);
      await this.deps.provider.images.delete(failed.externalId);
      log.info('image of the failed validation deleted in the provider', { externalId: failed.externalId });
    } catch (err) {
      // A failed record accounts for no image, so the image lifecycle's leak check deletes it later.
      log.warn('could not delete the image of the failed validation; the leak check will', { externalId: failed.externalId, error: coerceError(err).message });
    }
  }

  /** A state change that lost a race (an operator deleted the upload meanwhile) is not an error. */
  private async settle(p: Promise<UploadRecord | undefined>): Promise<UploadRecord | undefined> {
    try {
      return await p;
    } catch (err) {
      if (err instanceof StateConflictError) return undefined;
      throw err;
    }
  }
}
