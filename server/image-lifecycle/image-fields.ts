/**
 * Nodepool 11's image fields (`username`, `python_path`, `shell_type`): a new build records its
 * diskimage's `username`, `python-path` and `shell-type`, and an upload copies its build's.
 * Pure.
 */
import type { BuildRecord } from '../../lib/store/models.js';

export type ImageFields = Pick<BuildRecord, 'username' | 'pythonPath' | 'shellType'>;

/** A diskimage's `username`, `python-path` and `shell-type`, as Nodepool 11 records them on builds and uploads. */
export function imageFields(d: { username: string; pythonPath: string; shellType?: string | undefined } | undefined): ImageFields {
  return d ? { username: d.username, pythonPath: d.pythonPath, shellType: d.shellType ?? null } : {};
}

/** The image fields a build record has. */
export function definedFields(b: BuildRecord | undefined): ImageFields {
  const out: ImageFields = {};
  if (b?.username !== undefined) out.username = b.username;
  if (b?.pythonPath !== undefined) out.pythonPath = b.pythonPath;
  if (b?.shellType !== undefined) out.shellType = b.shellType;
  return out;
}
