/**
 * `nodepool image-list [--json]`: every upload (`Build ID, Upload ID, Provider, Image,
 * Provider Image Name, Provider Image ID, State, Age`, plus `Progress` while any upload runs:
 * `1.2/3.4 GiB 45% 180 MiB/s`) and, under the table, which upload targets need attention
 * (paused, waiting, backing off after failures, validating, last failed validation; a failed
 * upload's reason by its first line).
 */
import { corruptJson, corruptLines, corruptRows } from '../../lib/status/corrupt.js';
import { renderTable } from '../../lib/status/table.js';
import { imageListJson, targetAttention, uploadTable } from '../../lib/status/uploads.js';
import {
  commandConfig, EXIT, readServerLiveness, runCommand, warnUnlessServerWell, withStore, type CommandContext, type CommandResult,
} from './shared.js';
import { LIFECYCLE_STATUS_KEY, type LifecycleStatus } from '../../lib/status/lifecycle-status.js';

/** Options of {@link imageList}. */
export interface ImageListOptions extends CommandContext {
  /**
   * Print `{ uploads, targets }` as JSON instead of the table: each upload as stored, with
   * `age` (seconds) and `transfer` (bytes sent and total, percent, rate; null unless uploading);
   * each target with `validation: {validating, lastFailure}` (lib/status/validation.ts).
   */
  json?: boolean;
}

/** Lists uploads (table or JSON); exit 0, or 2 for a config error. */
export function imageList(opts: ImageListOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    await withStore(config, async (store) => {
      const [uploads, status, pauses, corrupt] = await Promise.all([
        store.listUploads(),
        store.getStatus<LifecycleStatus>(LIFECYCLE_STATUS_KEY),
        store.listPauses(),
        store.listCorrupt({ kinds: ['upload', 'pause'] }),
      ]);
      const now = (opts.now ?? Date.now)();
      const targets = status?.value.targets ?? [];
      const server = await readServerLiveness(store, now);
      warnUnlessServerWell(out, server);
      if (opts.json) {
        const json = imageListJson(uploads, targets, now);
        out.out(`${JSON.stringify({ ...json, uploads: [...json.uploads, ...corruptJson(corrupt, ['upload'])] }, null, 2)}\n`);
        return;
      }
      const table = uploadTable(uploads, now);
      out.out(renderTable(table.columns, [...table.rows, ...corruptRows(table.columns, corrupt, ['upload'])]));
      for (const line of targetAttention({ targets, uploads, pauses, now })) out.out(`${line}\n`);
      for (const line of corruptLines(corrupt.filter((c) => c.kind === 'upload' || c.provider !== undefined), ['upload', 'pause'])) out.out(`${line}\n`);
    }, { readOnly: true });
    return EXIT.ok;
  });
}
