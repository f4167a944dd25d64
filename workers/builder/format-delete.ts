/**
 * `delete-after-upload` on the builder: deletes the local files of some formats of a complete
 * build (the server asks once every provider reading them has a ready upload) and keeps the
 * build: its sidecar lists the files that remain and the formats deleted, and it stays
 * advertised (its uploads are in use; a new upload in a kept format, or converted from one,
 * still works).
 */
import type { ImageFileInfo, ImageRepository, ImageSidecar } from './image-repository.js';

/** The WORK_COMPLETE payload of a partial `image-delete:<id>`. */
export interface FormatsDeletedPayload {
  'deleted-formats': string[];
  /** The build's files that remain. */
  files: ImageFileInfo[];
  'freed-bytes': number;
}

/** What {@link deleteFormats} did. */
export interface FormatsDeletion {
  sidecar: ImageSidecar;
  /** Directory entries removed. */
  removed: string[];
  payload: FormatsDeletedPayload;
}

/**
 * Deletes `formats`' files of the build `sidecar` describes and rewrites its sidecar (atomically,
 * after the files are gone: an interrupted deletion is finished by the next ask). A format
 * already gone counts as deleted.
 */
export async function deleteFormats(repo: ImageRepository, sidecar: ImageSidecar, formats: readonly string[]): Promise<FormatsDeletion> {
  const id = sidecar['image-id'];
  const { removed, freedBytes } = await repo.removeFormats(id, formats);
  const gone = new Set(formats);
  const files = sidecar.files.filter((f) => !gone.has(f.format));
  const deleted = [...new Set([...(sidecar['deleted-formats'] ?? []), ...formats])].sort();
  const next: ImageSidecar = { ...sidecar, files, 'deleted-formats': deleted };
  await repo.writeSidecar(next);
  return { sidecar: next, removed, payload: { 'deleted-formats': [...formats].sort(), files, 'freed-bytes': freedBytes } };
}
