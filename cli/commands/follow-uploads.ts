/**
 * The second half of `image-build --follow`: once the build is ready, follows its upload to
 * every provider the server uploads it to (the upload targets the server publishes), with a
 * progress bar each, until every one is ready or failed. A target paused before its upload
 * started is not waited for.
 */
import { sleep } from '../../lib/lifecycle.js';
import type { BuildRecord, UploadRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import { countOf } from '../../lib/status/builds.js';
import { LIFECYCLE_STATUS_KEY, type LifecycleStatus, type UploadTargetStatus } from '../../lib/status/lifecycle-status.js';
import { serverDownText } from '../../lib/status/server.js';
import { transferText, uploadTransfer } from '../../lib/status/uploads.js';
import { progressBar } from '../../lib/status/progress.js';
import type { ProgressView } from './progress-view.js';
import { CommandFailure } from '../../lib/errors.js';
import { EXIT, readServerLiveness, type CommandOutput } from './shared.js';

/** When and how `--follow` polls, shared by the build and the upload phase. */
export interface FollowTiming {
  /** The whole follow ends by then (epoch ms). */
  deadline: number;
  timeoutMs: number;
  now: () => number;
  pollIntervalMs: number;
  signal: AbortSignal | undefined;
}

/** Throws when no server is alive any more (nothing would move). */
export async function requireServer(store: Store, now: number): Promise<void> {
  const server = await readServerLiveness(store, now);
  if (!server.alive) throw new CommandFailure(EXIT.failed, `Stopped following: ${serverDownText(server)}`);
}

/** Waits one poll interval, never past the deadline; rejects when the signal fires. */
export function nextPoll(t: FollowTiming): Promise<void> {
  return sleep(Math.max(1, Math.min(t.pollIntervalMs, t.deadline - t.now())), t.signal);
}

/** How one target's follow ended. */
type Ended = 'ready' | 'failed' | 'not followed';

/**
 * Follows the uploads of `build` (ready). Exit 0 when every followed upload is ready, 1 when
 * any failed. Throws CommandFailure on timeout or when the server goes away.
 */
export async function followUploads(store: Store, out: CommandOutput, view: ProgressView, build: BuildRecord, t: FollowTiming): Promise<number> {
  const followed = new Map<string, string>(); // provider → upload id
  const ended = new Map<string, Ended>();
  let announced = false;
  let providers: string[] = [];
  while (t.now() < t.deadline) {
    await requireServer(store, t.now());
    const status = (await store.getStatus<LifecycleStatus>(LIFECYCLE_STATUS_KEY))?.value;
    if (status) {
      const targets = status.targets.filter((x) => x.diskimage === build.diskimage);
      const uploads = await store.listUploads({ buildId: build.id });
      providers = [...new Set([...targets.map((x) => x.provider), ...followed.keys()])].sort();
      if (!announced) {
        announced = true;
        const active = targets.filter((x) => !x.paused || uploads.some((u) => u.provider === x.provider)).map((x) => x.provider).sort();
        if (active.length) view.line(`Following ${countOf(active.length, 'upload')} of ${build.id}: ${active.join(', ')}`);
      }
      const bars: string[] = [];
      for (const provider of providers) {
        if (ended.has(provider)) continue;
        const target = targets.find((x) => x.provider === provider);
        const id = followed.get(provider);
        const upload = id !== undefined ? uploads.find((u) => u.id === id) : uploads.find((u) => u.provider === provider);
        if (id !== undefined && !upload) {
          ended.set(provider, 'failed');
          view.line(`Upload ${id} of ${build.id} to ${provider} disappeared from the store`);
          continue;
        }
        if (!upload) {
          const skip = waitForTarget(target, build, view);
          if (skip) ended.set(provider, 'not followed');
          continue;
        }
        followed.set(provider, upload.id);
        const end = uploadOutcome(upload, build);
        if (end) {
          ended.set(provider, end.ok ? 'ready' : 'failed');
          view.endBar();
          if (end.ok) out.out(`${end.text}\n`);
          else view.line(end.text);
          continue;
        }
        view.note(upload.reason ? `Upload ${upload.id} to ${provider} retrying: ${upload.reason}` : null, `retry:${provider}`);
        const bar = progressLine(upload, t.now(), view);
        if (bar) bars.push(bar);
      }
      view.bars(bars);
      if (providers.every((p) => ended.has(p))) {
        view.endBar();
        const failed = [...ended.values()].filter((e) => e === 'failed').length;
        return failed ? EXIT.failed : EXIT.ok;
      }
    }
    await nextPoll(t);
  }
  view.endBar();
  const waiting = providers.filter((p) => !ended.has(p));
  throw new CommandFailure(EXIT.failed, `Timed out after ${Math.round(t.timeoutMs / 1000)} s waiting for the uploads of ${build.id}${waiting.length ? ` (to ${waiting.join(', ')})` : ''}; the server goes on with them`);
}

/** Notes why a target has no upload yet; true when it is paused and so not waited for. */
function waitForTarget(target: UploadTargetStatus | undefined, build: BuildRecord, view: ProgressView): boolean {
  if (!target) return true; // the target left the server's config before its upload started
  const key = `wait:${target.provider}`;
  if (target.paused) {
    view.line(`Uploads of ${build.diskimage} to ${target.provider} are paused by ${target.paused}; not following them`);
    return true;
  }
  if (target.waiting) view.note(`${target.provider}: waiting: ${target.waiting}`, key);
  else if (target.failures > 0 && target.retryAt !== null) {
    view.note(`${target.provider}: waiting to try again after ${countOf(target.failures, 'failed upload')} (last: ${target.lastFailure ?? 'no reason recorded'})`, key);
  } else view.note(null, key);
  return false;
}

/** The bar line (terminal) or, per 10 % step, a printed line (no terminal; then null). */
function progressLine(u: UploadRecord, now: number, view: ProgressView): string | null {
  const transfer = uploadTransfer(u, now);
  if (!transfer) return view.live ? `${progressBar(0)} ${u.provider} starting` : null;
  if (view.live) return `${progressBar(transfer.percent)} ${u.provider} ${transferText(transfer, { eta: true, percent: false })}`;
  view.step(`upload:${u.id}`, transfer.percent, `Upload ${u.id} to ${u.provider}: ${transferText(transfer, { eta: true })}`);
  return null;
}

/** How an upload ended, or null while it runs. */
export function uploadOutcome(u: UploadRecord, build: BuildRecord): { ok: boolean; text: string } | null {
  const what = `Upload ${u.id} of ${build.id} to ${u.provider}`;
  switch (u.state) {
    case 'uploading': return null;
    case 'ready': return { ok: true, text: `${what} ready (${u.externalId ?? 'no image id recorded'})` };
    case 'deleting': return { ok: false, text: `${what} is being deleted: ${u.reason ?? 'no reason recorded'}` };
    default: return { ok: false, text: `${what} failed: ${u.reason ?? 'no reason recorded'}` };
  }
}
