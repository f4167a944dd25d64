/**
 * Launch bookkeeping for drivers that create resources: `launch` runs the driver's
 * `launchNode` in the background and writes the outcome to the store (ready, failed, or
 * aborted when over quota); `launchesComplete` tells when every launch has an outcome.
 * Quota and reuse hooks default to "yes"; drivers override what they know better. Once the
 * outcome is written, it is counted on the upload the driver said the launch boots
 * ({@link LaunchingHandler.bootsUpload}; the image rollout, issue 24), in the background.
 */
import { coerceError, isStoreUnreachable, QuotaExceededError } from '../../errors.js';
import { retryWithBackoff } from '../../lifecycle.js';
import type { Logger } from '../../log.js';
import type { NodePatch, NodeRecord, NodeRequestRecord, NodeState } from '../../store/models.js';
import type { Store } from '../../store/store.js';
import type { PoolInfo, RequestHandler } from '../contract/driver.js';
import { countLaunch, type CountedUpload } from '../../rollout/count-launch.js';

/** How long a launch's outcome is tried again while the store does not answer (see recordOutcome). */
const OUTCOME_RETRY_MS = 10 * 60_000;

/** What a launching handler works with. */
export interface LaunchingHandlerContext {
  store: Store;
  log: Logger;
  pool: PoolInfo;
  request: NodeRequestRecord;
  /** Epoch ms for rollout decisions (the provider's clock); Date.now when absent. */
  clock?: () => number;
}

export abstract class LaunchingHandler implements RequestHandler {
  readonly canLaunch = true;
  private running = 0;
  /** By node id: the upload each launch in flight boots, as its driver told ({@link bootsUpload}). */
  private readonly booting = new Map<string, CountedUpload>();

  constructor(protected readonly hctx: LaunchingHandlerContext) {}

  get aliveCount(): number {
    return this.running;
  }

  /**
   * Creates the resource for a `building` node and resolves with the fields of the ready node
   * (addresses, external id, host keys). Thrown: QuotaExceededError (→ aborted) or any error
   * (→ failed with its message). The driver removes what a failed attempt created.
   */
  protected abstract launchNode(node: NodeRecord): Promise<NodePatch>;

  imagesAvailable(): Promise<boolean> {
    return Promise.resolve(true);
  }

  hasProviderQuota(_labels: readonly string[]): Promise<boolean> {
    return Promise.resolve(true);
  }

  hasRemainingQuota(_label: string): Promise<boolean> {
    return Promise.resolve(true);
  }

  checkReusableNode(_node: NodeRecord): Promise<boolean> {
    return Promise.resolve(true);
  }

  nodeMetadata(_label: string): NodePatch {
    return {};
  }

  /** One instance per node; drivers that know a label's cores and ram say so. */
  labelResources(_label: string): Promise<Readonly<Record<string, number>> | undefined> {
    return Promise.resolve({ instances: 1 });
  }

  /**
   * The hook a driver calls once the launch of `node` boots its chosen image (the server or VM
   * is being made from it): `upload` (null: no upload, e.g. a cloud image). The launch's outcome
   * is counted on it, also when the launch fails after that (boot, address, host-key scan); a
   * later call (a retried attempt) replaces an earlier one. Launches
   * that count nothing: quota aborts, validation boots (`validatesUpload`), launches given up
   * because the provider stops ({@link launchAbandoned}).
   */
  protected bootsUpload(node: NodeRecord, upload: CountedUpload | null): void {
    if (upload) this.booting.set(node.id, upload);
    else this.booting.delete(node.id);
  }

  /** Whether launches failing now were given up (the provider stops), so their failure says nothing of the image. */
  protected launchAbandoned(): boolean {
    return false;
  }

  launch(node: NodeRecord): void {
    this.running += 1;
    const log = this.hctx.log.child({ node: node.id, request: this.hctx.request.id });
    void (async () => {
      let outcome: NodePatch & { state: NodeState };
      let abandoned = false;
      try {
        const patch = await this.launchNode(node);
        outcome = { ...patch, state: 'ready', reason: null };
        log.info('node ready', { externalId: patch.externalId ?? node.externalId, ip: patch.interfaceIp ?? null });
      } catch (err) {
        const e = coerceError(err);
        const state = e instanceof QuotaExceededError ? 'aborted' : 'failed';
        outcome = { state, reason: e.message };
        abandoned = this.launchAbandoned();
        log.warn(`node launch ${state}`, { reason: e.message });
      }
      await this.recordOutcome(node, outcome, log);
      this.countOutcome(node, outcome.state, abandoned, log);
    })().catch((err: unknown) => {
      log.error('launch bookkeeping failed', { error: coerceError(err).message });
    }).finally(() => {
      this.booting.delete(node.id);
      this.running -= 1;
    });
  }

  /** Counts the launch on the upload it booted, in the background: it never delays or fails the launch. */
  private countOutcome(node: NodeRecord, state: NodeState, abandoned: boolean, log: Logger): void {
    const upload = this.booting.get(node.id);
    this.booting.delete(node.id);
    if (!upload || state === 'aborted' || abandoned || (node.validatesUpload ?? '') !== '') return;
    void countLaunch(this.hctx.store, upload, state === 'ready' ? 'success' : 'failure', this.hctx.clock ?? Date.now, log);
  }

  /**
   * Writes a launch's outcome on its `building` node. The store may be unreachable for a while
   * (a ZooKeeper outage): the write is tried again with a capped backoff for up to
   * {@link OUTCOME_RETRY_MS}, and the launch counts as running meanwhile, so the request waits
   * for the outcome instead of reading a node still `building` as failed. A node no longer
   * `building` (the deleter took it) or gone is left as it is.
   */
  private async recordOutcome(node: NodeRecord, outcome: NodePatch, log: Logger): Promise<void> {
    const until = Date.now() + OUTCOME_RETRY_MS;
    let attempts = 1;
    try {
      await retryWithBackoff(() => this.hctx.store.updateNode(node.id, outcome, { expectStates: ['building'] }), {
        retryable: (err) => isStoreUnreachable(err) && Date.now() < until, initialMs: 500, maxMs: 10_000,
        onRetry: (err, n) => {
          attempts = n + 2;
          if (n === 0) log.warn('could not record the launch outcome yet; retrying', { state: outcome.state, error: coerceError(err).message });
        },
      });
      if (attempts > 1) log.info('launch outcome recorded after the store answered again', { state: outcome.state, attempts });
    } catch (err) {
      log.warn('could not record the launch outcome', { state: outcome.state, error: coerceError(err).message });
    }
  }

  launchesComplete(): boolean {
    return this.running === 0;
  }
}
