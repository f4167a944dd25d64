/**
 * Planner rule 6 (pure): Nodepool 11's `delete-after-upload` and `keep-formats`. A ready
 * build's local file of a format is deleted on its builder once every provider that reads
 * that file for its uploads has a ready upload of the build; formats in `keep-formats` stay.
 * The build stays ready: its uploads are in use, and its builder still advertises it.
 *
 * What a builder holds of a build is the record's `files` (what remains; the builder reports
 * it at build time and after each deletion). A build whose every file was deleted has no
 * `files` and is marked by its `reason` ({@link FILES_DELETED}), so it is not taken for a
 * build whose builder never reported files (then its `formats` are assumed on disk).
 */
import { imageTargets } from '../../lib/drivers/config-registry.js';
import { conversionSource } from '../../lib/images/formats.js';
import { fn } from '../../lib/gearman/functions.js';
import type { BuildRecord } from '../../lib/store/models.js';
import type { PlanView, UploadTarget, WorkingBuild } from './plan-view.js';

/** How the `reason` of a ready build whose local files were deleted after upload begins. */
export const FILES_DELETED = 'local files deleted after upload';

/** `local files deleted after upload (delete-after-upload): qcow2; kept: raw`, for a ready build's reason. */
export function filesDeletedReason(deleted: readonly string[], kept: readonly string[]): string {
  return `${FILES_DELETED} (delete-after-upload): ${deleted.join(', ')}${kept.length ? `; kept: ${kept.join(', ')}` : ''}`;
}

/** The format of each configured upload target, by `<diskimage> <provider>` (computed once per pass). */
const formatCache = new WeakMap<PlanView, Map<string, string>>();

/** The format uploads to `t` are in. */
export function formatOf(view: PlanView, t: UploadTarget): string {
  let formats = formatCache.get(view);
  if (!formats) {
    formats = new Map();
    for (const p of view.snapshot.config.providers) for (const it of imageTargets(p)) formats.set(`${it.diskimage} ${p.name}`, it.format);
    formatCache.set(view, formats);
  }
  return formats.get(`${t.diskimage.name} ${t.provider}`) ?? 'qcow2';
}

/** Formats whose file the build's builder still holds. */
export function localFormats(rec: Pick<BuildRecord, 'files' | 'formats' | 'reason'>): string[] {
  if (rec.files.length > 0) return rec.files.map((f) => f.format);
  // Also in a lost build's reason (it keeps the note), seen in the pass that finds it again.
  return rec.reason?.includes(FILES_DELETED) ? [] : [...rec.formats];
}

/** The local file an upload in `format` reads (converted from when the build lacks it); undefined: none left. */
export function sourceFormat(available: readonly string[], format: string): string | undefined {
  return available.includes(format) ? format : conversionSource(available, format);
}

/**
 * Why an upload of `b` to `t` cannot be made from the files its builder still holds; null
 * when it can.
 */
export function missingSource(view: PlanView, b: WorkingBuild, t: UploadTarget): string | null {
  const available = localFormats(b.rec);
  const format = formatOf(view, t);
  if (sourceFormat(available, format) !== undefined) return null;
  // Never built in a usable format: the upload is tried as before (and the build rule rebuilds for the format).
  if (sourceFormat(b.rec.formats, format) === undefined) return null;
  return `build ${b.rec.id} has no local ${format} file (nor one to convert from) any more: ` +
    `deleted after its uploads (delete-after-upload; kept: ${available.join(', ') || 'none'}); ` +
    `the next build of ${b.rec.diskimage} is uploaded here (nodepool image-build ${b.rec.diskimage} asks for one now)`;
}

/** Rule 6: `delete-formats` for ready builds whose local files every reader has uploaded. */
export function planLocalFiles(view: PlanView): void {
  if (!view.adminReachable) return;
  const { inFlight } = view.snapshot;
  const uploadingNow = new Set(view.actions.flatMap((a) => (a.type === 'start-upload' ? [a.buildId] : [])));
  for (const b of view.builds) {
    if (b.state !== 'ready' || b.touched || inFlight.buildDeletes.has(b.rec.id) || uploadingNow.has(b.rec.id)) continue;
    const d = view.diskimages.get(b.rec.diskimage);
    if (!d || !d.deleteAfterUpload) continue;
    // A file is never deleted under an upload of the build (a conversion may be reading it).
    if (b.uploads.some((u) => u.state === 'uploading' || inFlight.uploads.has(u.rec.id))) continue;
    if (!view.isRegistered(fn.imageDelete(b.rec.id))) continue;
    const available = localFormats(b.rec);
    const keep = new Set<string>(d.keepFormats);
    const targets = view.targets.filter((t) => t.diskimage.name === d.name);
    const deletable = available.filter((f) => !keep.has(f) && targets.every((t) =>
      sourceFormat(available, formatOf(view, t)) !== f || b.uploads.some((u) => u.pair === t.pair && u.state === 'ready')));
    if (deletable.length === 0) continue;
    view.emit(b, {
      type: 'delete-formats', buildId: b.rec.id, formats: deletable,
      kept: available.filter((f) => !deletable.includes(f)),
    });
  }
}
