/**
 * Presenters for corrupt records (lib/store/corrupt.ts) in the lists: a row that says
 * `corrupt` in the State column, a line under the table with the reason and the command that
 * removes it, and a JSON entry. The CLI and the web lists use the same ones. Pure.
 */
import type { CorruptKind, CorruptRecord } from '../store/corrupt.js';

/** The State shown for a corrupt record. */
export const CORRUPT_STATE = 'corrupt';

/** What removes a corrupt record of each kind. */
export function removeCommand(c: CorruptRecord): string {
  switch (c.kind) {
    case 'build': return `nodepool dib-image-delete ${c.id}`;
    case 'upload': return `nodepool image-delete --upload-id ${c.id} --provider ${c.provider ?? '<provider>'} --image ${c.diskimage ?? '<image>'} --build-id <build-id>`;
    case 'node': return `nodepool delete ${c.id}`;
    case 'request': return `nodepool delete ${c.id}`;
    case 'pause': return `nodepool image-unpause ${c.diskimage ?? c.id}${c.provider ? ` --provider ${c.provider}` : ''}`;
    case 'build-request': return `nodepool image-build ${c.diskimage ?? c.id} (a new request replaces it)`;
    case 'launcher': return 'restart the launcher that registered it (the registration goes with its session)';
    case 'pin': return `nodepool image-unpin ${c.diskimage ?? c.id}${c.provider ? ` --provider ${c.provider}` : ''}`;
    case 'revocation': return `nodepool image-unrevoke ${c.id}`;
    case 'upload-retry': return `POST /api/upload/<upload-id>/retry for a failed upload of ${c.diskimage ?? '<diskimage>'} on ${c.provider ?? '<provider>'} (a new request replaces it)`;
    case 'audit': return 'none: it ages out with the audit trail\'s pruning';
  }
}

/**
 * A table row for `columns`: the id under the id column (`ID`, `Upload ID`, `Request ID`),
 * `Image` and `Provider` where known, `corrupt` under `State`, the rest empty.
 */
export function corruptRow(columns: readonly string[], c: CorruptRecord): string[] {
  return columns.map((col) => {
    if (col === 'ID' || col === 'Upload ID' || col === 'Request ID') return c.id;
    if (col === 'Image') return c.diskimage ?? '';
    if (col === 'Provider') return c.provider ?? '';
    if (col === 'State') return CORRUPT_STATE;
    return '';
  });
}

/** Rows for the corrupt records of `kinds`, in the store's order. */
export function corruptRows(columns: readonly string[], corrupt: readonly CorruptRecord[], kinds: readonly CorruptKind[]): string[][] {
  return corrupt.filter((c) => kinds.includes(c.kind)).map((c) => corruptRow(columns, c));
}

/** `corrupt build debian-0000000001: its data is not valid JSON; remove it: nodepool dib-image-delete debian-0000000001`. */
export function corruptLine(c: CorruptRecord): string {
  return `corrupt ${c.kind} ${c.id}: ${c.reason}; remove it: ${removeCommand(c)}`;
}

/** Lines for the corrupt records of `kinds`. */
export function corruptLines(corrupt: readonly CorruptRecord[], kinds: readonly CorruptKind[]): string[] {
  return corrupt.filter((c) => kinds.includes(c.kind)).map(corruptLine);
}

/** A corrupt record as the `--json` lists print it, beside the good records. */
export interface CorruptJson {
  id: string;
  state: typeof CORRUPT_STATE;
  kind: CorruptKind;
  reason: string;
  diskimage?: string;
  provider?: string;
}

/** The JSON entries for the corrupt records of `kinds`. */
export function corruptJson(corrupt: readonly CorruptRecord[], kinds: readonly CorruptKind[]): CorruptJson[] {
  return corrupt.filter((c) => kinds.includes(c.kind)).map((c) => ({ ...c, state: CORRUPT_STATE }));
}
