/**
 * `nodepool image-build <diskimage> [--follow] [--timeout SECONDS]`: records a build request
 * for the server. With `--follow`, waits for the build the request starts and shows its
 * progress until it is ready or fails, then follows each upload of it with a progress bar
 * until all are ready or one failed. The request is lib/actions/image-build.ts `requestImageBuild`.
 */
import type { Config } from '../../lib/config/schema.js';
import { imageTarget } from '../../lib/drivers/config-registry.js';
import type { BuildRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import { progressPercent } from '../../lib/status/progress.js';
import { serverDownText } from '../../lib/status/server.js';
import { followUploads, nextPoll, requireServer, type FollowTiming } from './follow-uploads.js';
import { ProgressView } from './progress-view.js';
import { CommandFailure } from '../../lib/errors.js';
import {
  commandConfig, CommandOutput, EXIT, readServerLiveness, requireDiskimage, runCommand, withStore,
  type CommandContext, type CommandResult, type LiveOutput,
} from './shared.js';
import { settled } from './action-refusal.js';
import { requestImageBuild } from '../../lib/actions/image-build.js';
import { LIFECYCLE_STATUS_KEY, type LifecycleStatus } from '../../lib/status/lifecycle-status.js';

/** How long `--follow` waits past the diskimage's build-timeout and longest image-upload-timeout by default. */
export const FOLLOW_SLACK_SECONDS = 600;
/** How often `--follow` reads the store. */
export const FOLLOW_POLL_MS = 500;

/** Options of {@link imageBuild}. */
export interface ImageBuildOptions extends CommandContext {
  diskimage: string;
  /** Wait for the build and then its uploads, showing their progress. */
  follow?: boolean;
  /**
   * How long to follow, build and uploads together (default: the diskimage's build-timeout plus
   * the longest image-upload-timeout of its providers plus {@link FOLLOW_SLACK_SECONDS}).
   */
  timeoutSeconds?: number;
  /** Store poll interval while following (default {@link FOLLOW_POLL_MS}). */
  pollIntervalMs?: number;
  /** Where `--follow` writes as it goes; without it everything lands in the result. */
  live?: LiveOutput;
  /** Stops following (Ctrl-C); the build itself goes on. */
  signal?: AbortSignal;
}

/**
 * Requests a build (exit 0); 3 for an unknown diskimage, 1 when paused or when a build of it
 * is in progress (no request recorded). With `follow`: 0 when the build and every upload of
 * it are ready; 1 when the build or an upload fails, no server is alive, or the timeout
 * passes; 130 when interrupted.
 */
export function imageBuild(opts: ImageBuildOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    if (opts.timeoutSeconds !== undefined) {
      if (!opts.follow) throw new CommandFailure(EXIT.usage, '--timeout only applies with --follow');
      if (!(opts.timeoutSeconds > 0)) throw new CommandFailure(EXIT.usage, `--timeout must be a positive number of seconds, got ${opts.timeoutSeconds}`);
    }
    const config = commandConfig(opts);
    return withStore(config, async (store) => {
      const { diskimage: name, request, message } = settled(await requestImageBuild({ store, config }, { diskimage: opts.diskimage }));
      const diskimage = requireDiskimage(config, name);
      out.out(`${message}\n`);
      const now = opts.now ?? Date.now;
      const server = await readServerLiveness(store, now());
      if (!opts.follow) {
        if (!server.alive) out.err(`warning: ${serverDownText(server)}; the request waits for one\n`);
        return EXIT.ok;
      }
      if (!server.alive) throw new CommandFailure(EXIT.failed, `Cannot follow the build: ${serverDownText(server)}`);
      const timeoutMs = (opts.timeoutSeconds ?? diskimage.buildTimeout + longestUploadTimeout(config, name) + FOLLOW_SLACK_SECONDS) * 1000;
      return follow(store, out, {
        diskimage: name, requested: request.requested, deadline: now() + timeoutMs, timeoutMs, now,
        pollIntervalMs: opts.pollIntervalMs ?? FOLLOW_POLL_MS, signal: opts.signal,
      });
    });
  }, opts.live);
}

interface FollowParams extends FollowTiming {
  diskimage: string;
  /** The request's time: the followed build is the first one created at or after it. */
  requested: number;
}

/** Follows the build, then its uploads; Ctrl-C stops following (exit 130) and leaves both to the server. */
async function follow(store: Store, out: CommandOutput, p: FollowParams): Promise<number> {
  const view = new ProgressView(out);
  let following = `the build of ${p.diskimage}`;
  try {
    const build = await followBuild(store, out, view, p, (id) => { following = `build ${id}`; });
    following = `the uploads of ${build.id}`;
    return await followUploads(store, out, view, build, p);
  } catch (err) {
    view.endBar();
    if (p.signal?.aborted && !(err instanceof CommandFailure)) {
      out.err(`Stopped following ${following}; the server goes on with ${following.startsWith('the uploads') ? 'them' : 'it'}\n`);
      return EXIT.interrupted;
    }
    throw err;
  }
}

/** Polls the store until the requested build is ready (returned); throws when it fails, the deadline passes or the server goes away. */
async function followBuild(store: Store, out: CommandOutput, view: ProgressView, p: FollowParams, onFound: (id: string) => void): Promise<BuildRecord> {
  let followed: string | null = null;
  while (p.now() < p.deadline) {
    await requireServer(store, p.now());
    const status = (await store.getStatus<LifecycleStatus>(LIFECYCLE_STATUS_KEY))?.value.diskimages.find((d) => d.diskimage === p.diskimage);
    const build = await findFollowed(store, p, followed);
    if (build === undefined && followed !== null) throw new CommandFailure(EXIT.failed, `Build ${followed} disappeared from the store`);
    if (build === undefined) {
      if (status?.paused) throw new CommandFailure(EXIT.failed, `Diskimage ${p.diskimage} was paused before its build started`);
      view.note(status?.waiting ? `waiting: ${status.waiting}` : null);
    } else {
      if (followed === null) {
        followed = build.id;
        onFound(build.id);
        view.line(`Following build ${build.id}${build.builderHostname ? ` on ${build.builderHostname}` : ''}`);
      }
      const ended = buildOutcome(build);
      if (ended) {
        view.endBar();
        if (!ended.ok) throw new CommandFailure(EXIT.failed, ended.text);
        out.out(`${ended.text}\n`);
        return build;
      }
      view.note(status?.waiting ? `waiting: ${status.waiting}` : null);
      const pct = progressPercent(build.progress);
      if (pct !== null) view.progress(build.id, pct);
    }
    await nextPoll(p);
  }
  view.endBar();
  const what = followed ? `build ${followed} to finish` : `a build of ${p.diskimage} to start`;
  throw new CommandFailure(EXIT.failed, `Timed out after ${Math.round(p.timeoutMs / 1000)} s waiting for ${what}; the request stays with the server`);
}

/** The followed build: once known, by id; before that the first build created at or after the request. */
async function findFollowed(store: Store, p: FollowParams, followed: string | null): Promise<BuildRecord | undefined> {
  if (followed !== null) return store.getBuild(followed);
  return (await store.listBuilds({ diskimage: p.diskimage })).find((b) => b.created >= p.requested);
}

/** The longest image-upload-timeout of the diskimage's upload targets (s), 0 without any. */
function longestUploadTimeout(config: Config, diskimage: string): number {
  return Math.max(0, ...config.providers.map((p) => imageTarget(p, diskimage)?.uploadTimeout ?? 0));
}

/** How a build ended, or null while it is still building. */
export function buildOutcome(b: BuildRecord): { ok: boolean; text: string } | null {
  switch (b.state) {
    case 'building': return null;
    case 'ready': return { ok: true, text: `Build ${b.id} ready (${b.formats.join(', ')})` };
    case 'deleting': return { ok: false, text: `Build ${b.id} is being deleted: ${b.reason ?? 'no reason recorded'}` };
    default: return { ok: false, text: `Build ${b.id} ${b.state}: ${b.reason ?? 'no reason recorded'}` };
  }
}
