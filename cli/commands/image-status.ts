/**
 * `nodepool image-status [--json]` (Nodepool 11): per diskimage, whether its builds are
 * paused and whether a build request is waiting (`Image, Paused, Build Request, Build
 * Request Age`).
 */
import { IMAGE_STATUS_COLUMNS, imageStatusAttention, imageStatusRow, imageStatuses } from '../../lib/status/image-status.js';
import { renderTable } from '../../lib/status/table.js';
import { commandConfig, EXIT, runCommand, withStore, type CommandContext, type CommandResult } from './shared.js';

/** Options of {@link imageStatus}. */
export interface ImageStatusOptions extends CommandContext {
  /** Print the statuses as a JSON array instead of the table. */
  json?: boolean;
}

/** Lists diskimage statuses; exit 0, or 2 for a config error. */
export function imageStatus(opts: ImageStatusOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    const [builds, requests, pauses] = await withStore(config, (store) => Promise.all([
      store.listBuilds(), store.listBuildRequests(), store.listPauses(),
    ]));
    const statuses = imageStatuses({
      diskimages: config.diskimages, builtDiskimages: builds.map((b) => b.diskimage), requests, pauses, now: (opts.now ?? Date.now)(),
    });
    if (opts.json) {
      out.out(`${JSON.stringify(statuses, null, 2)}\n`);
      return EXIT.ok;
    }
    out.out(renderTable(IMAGE_STATUS_COLUMNS, statuses.map(imageStatusRow)));
    for (const line of imageStatusAttention(statuses)) out.out(`${line}\n`);
    return EXIT.ok;
  });
}
