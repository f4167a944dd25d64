/**
 * Nodepool 11's `username`, `python_path` and `shell_type` of builds and uploads (issue 21):
 * which fields a record has (absent stays absent, null stays null, in every backend), and
 * what a new upload takes: those given, else its build's, as Nodepool's builder copies them.
 * Pure.
 */
import type { BuildRecord } from './models.js';

/** The image fields of a build, an upload, or a new one. */
export type ImageFields = Pick<BuildRecord, 'username' | 'pythonPath' | 'shellType'>;

/** Their names, in one place. */
export const IMAGE_FIELD_KEYS = ['username', 'pythonPath', 'shellType'] as const;

/** The image fields `r` has (a field set to undefined counts as absent). */
export function imageFieldsOf(r: ImageFields): ImageFields {
  const out: ImageFields = {};
  for (const k of IMAGE_FIELD_KEYS) if (r[k] !== undefined) out[k] = r[k];
  return out;
}

/** A new upload's image fields: each one `given` has, else the build's, else none. */
export function uploadImageFields(given: ImageFields, build: ImageFields): ImageFields {
  return { ...imageFieldsOf(build), ...imageFieldsOf(given) };
}
