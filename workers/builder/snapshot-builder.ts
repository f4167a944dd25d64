/**
 * SnapshotBuild: the build method of `builder: snapshot` diskimages (docs/snapshot-builds.md).
 * It boots a build instance from the `snapshot.base-image` through the `snapshot.provider`'s
 * driver (the build-instance capability), logs in with a key made for this build alone and
 * the host keys scanned at boot as the only ones accepted, copies the setup in and runs it
 * (its output in the build log), seals the instance (build key and files removed, cloud-init
 * reset), waits for it to power off and has the driver write its disk as each format. The
 * instance is deleted on every path; BaseBuilder does the rest, as for any build.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { coerceError, SnapshotBuildError } from '../../lib/errors.js';
import type { BuildInstance } from '../../lib/drivers/contract/build-instance.js';
import type { BuildInstancesFactory } from '../../lib/drivers/core/driver-hosts.js';
import { escapeControlChars } from '../../lib/outside-text.js';
import { runCommand } from '../../lib/run-command.js';
import { runSshCommand } from '../../lib/ssh/ssh-command.js';
import type { BuildContext, BuildMethod, BuildMethodStart, BuiltImage } from './build-method.js';
import type { BuildRequest } from './job-payloads.js';
import { receiveCommand, runSetupCommand, sealCommand, SETUP_ENV_FILE, SETUP_FILE, setupEnvText } from './snapshot-commands.js';

/** Options of {@link SnapshotBuild}. */
export interface SnapshotBuildOptions {
  /** The build instances of a provider (the process's driver hosts). */
  buildInstances: BuildInstancesFactory;
  /** The ssh client (default `ssh` from PATH). */
  ssh?: string;
  /** How long a sealed instance may take to power off (default 300 s). */
  powerOffTimeoutMs?: number;
}

/** The steps a snapshot build reports (WORK_STATUS n of 4). */
const STEPS = ['booting', 'setup', 'powering off', 'snapshotting'] as const;

/** A short command on the instance (copy, seal) may take this long. */
const SHORT_COMMAND_MS = 120_000;

export class SnapshotBuild implements BuildMethod {
  constructor(private readonly opts: SnapshotBuildOptions) {}

  async build(req: BuildRequest, ctx: BuildContext): Promise<BuiltImage> {
    const snap = ctx.diskimage.snapshot;
    if (!snap) throw new SnapshotBuildError(`diskimage ${ctx.diskimage.name} has no snapshot: block`);
    const provider = ctx.config.providers.find((p) => p.name === snap.provider);
    if (!provider) throw new SnapshotBuildError(`provider ${snap.provider} of diskimage ${ctx.diskimage.name} is not in this builder's config`);
    // base-diskimage: the server sends that diskimage's newest ready upload to this provider.
    const baseImage = snap.baseDiskimage !== undefined ? req.baseImage : snap.baseImage;
    if (baseImage === undefined) {
      throw new SnapshotBuildError(`diskimage ${ctx.diskimage.name} builds on base-diskimage ${snap.baseDiskimage ?? '?'}, but the build request names no upload of it (a server that does not know base-diskimage sent it)`);
    }
    const instances = await this.opts.buildInstances(provider).catch((err: unknown) => {
      throw new SnapshotBuildError(`cannot boot build instances in provider ${provider.name}: ${coerceError(err).message}`, { cause: err });
    });
    const step = (name: (typeof STEPS)[number]): void => {
      ctx.buildLog.line(`snapshot build: ${name}`);
      ctx.progress(name, STEPS.indexOf(name) + 1, STEPS.length);
    };
    const key = path.join(ctx.tmpDir, 'build-key');
    const keyComment = `nodepool-build-${req.imageId}`;
    await runCommand(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', keyComment, '-f', key], { check: true, timeoutMs: 30_000 });
    step('booting');
    ctx.buildLog.line(`build instance base: ${baseImage}${snap.baseDiskimage !== undefined ? ` (the newest ready upload of ${snap.baseDiskimage} to ${provider.name})` : ''}`);
    let instance: BuildInstance | undefined;
    try {
      try {
        instance = await instances.boot({
          buildId: req.imageId, builderId: ctx.builderId, baseImage,
          authorizedKey: (await readFile(`${key}.pub`, 'utf8')).trim(), memory: snap.memory, cpus: snap.cpus,
          ...(snap.flavor !== undefined ? { flavor: snap.flavor } : {}), ...(snap.minRam !== undefined ? { minRam: snap.minRam } : {}),
        }, ctx.signal);
      } catch (err) {
        if (ctx.signal.aborted) return { formats: [] };
        throw new SnapshotBuildError(`the build instance in provider ${provider.name} did not come up: ${coerceError(err).message}`, { cause: err });
      }
      ctx.buildLog.line(`build instance ${instance.id} answers SSH on ${instance.host}:${instance.port}`);
      const ssh = this.session(instance, snap.username ?? instance.username, key, ctx);
      step('setup');
      const [setup] = snap.setup as [string, ...string[]];
      const envFile = path.join(ctx.tmpDir, 'setup.env');
      await writeFile(envFile, setupEnvText(snap.envVars), { mode: 0o600 });
      await ssh('copy the setup', receiveCommand(SETUP_FILE, '700'), { stdinFile: setup });
      await ssh('copy the setup environment', receiveCommand(SETUP_ENV_FILE, '600'), { stdinFile: envFile });
      if (ctx.signal.aborted) return { formats: [] };
      ctx.buildLog.line(`running the setup: ${snap.setup.join(' ')}`);
      await ssh('the setup', runSetupCommand(snap.setup), { timeoutMs: snap.setupTimeout * 1000, toLog: true });
      if (ctx.signal.aborted) return { formats: [] };
      step('powering off');
      await ssh('sealing the instance', sealCommand(keyComment), {});
      await instances.stop(instance.id, this.opts.powerOffTimeoutMs ?? 300_000, ctx.signal);
      step('snapshotting');
      for (const format of ctx.formats) {
        let last = -1;
        await instances.snapshot(instance.id, `${ctx.outBase}.${format}`, format, {
          signal: ctx.signal,
          onProgress: (done, total) => {
            const pct = Math.floor((done / total) * 100);
            if (pct >= last + 10) ctx.buildLog.line(`snapshot ${format}: ${pct} %`);
            last = Math.max(last, pct - (pct % 10));
          },
        });
      }
      return { formats: ctx.formats };
    } catch (err) {
      if (ctx.signal.aborted) return { formats: [] };
      if (err instanceof SnapshotBuildError) throw err;
      throw new SnapshotBuildError(`snapshot build of ${req.imageId}: ${coerceError(err).message}`, { cause: err });
    } finally {
      if (instance) {
        await instances.remove(instance.id).then(
          () => ctx.buildLog.line(`build instance ${instance?.id} deleted`),
          (err: unknown) => ctx.log.warn('could not delete the build instance; the next start of this builder retries', { instance: instance?.id, error: coerceError(err).message }),
        );
      }
    }
  }

  /**
   * Deletes the build instances a builder with this id left (killed with -9 mid-build), in
   * every provider a snapshot diskimage builds on. A provider that cannot be reached is logged
   * and tried again at the next start.
   */
  async start(ctx: BuildMethodStart): Promise<void> {
    const names = new Set(ctx.config.diskimages.flatMap((d) => (d.builder === 'snapshot' && d.snapshot ? [d.snapshot.provider] : [])));
    for (const provider of ctx.config.providers.filter((p) => names.has(p.name))) {
      try {
        const instances = await this.opts.buildInstances(provider);
        for (const id of await instances.leftovers(ctx.builderId)) {
          await instances.remove(id);
          ctx.log.warn('deleted a build instance a previous run of this builder left', { provider: provider.name, instance: id });
        }
      } catch (err) {
        ctx.log.warn('could not look for leftover build instances', { provider: provider.name, error: coerceError(err).message });
      }
    }
  }

  /** Runs commands on the instance; a non-zero exit (or none) is a SnapshotBuildError naming `what` and the output's last lines. */
  private session(instance: BuildInstance, user: string, key: string, ctx: BuildContext) {
    return async (what: string, command: string, o: { stdinFile?: string; timeoutMs?: number; toLog?: boolean }): Promise<void> => {
      const r = await runSshCommand({
        host: instance.host, port: instance.port, user, privateKey: key, hostKeys: instance.hostKeys, command,
        timeoutMs: o.timeoutMs ?? SHORT_COMMAND_MS, signal: ctx.signal, tailChars: 1500,
        ...(this.opts.ssh ? { ssh: this.opts.ssh } : {}), ...(o.stdinFile ? { stdinFile: o.stdinFile } : {}),
        ...(o.toLog ? { output: ctx.buildLog.writable } : {}),
      });
      if (r.exitCode === 0) return;
      // The instance's output is text from outside: control characters escaped before it becomes a message.
      const tail = escapeControlChars(r.outputTail.trim().split('\n').slice(-5).join(' | '));
      const how = r.timedOut ? `did not finish within ${Math.round((o.timeoutMs ?? SHORT_COMMAND_MS) / 1000)} s` : `exited with ${r.exitCode}`;
      throw new SnapshotBuildError(`${what} on build instance ${instance.id} ${how}${tail ? `: ${tail}` : ''}`);
    };
  }
}
