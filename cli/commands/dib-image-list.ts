/**
 * `nodepool dib-image-list [--json]`: every build (`ID, Image, Builder, Formats, State, Age`)
 * and, under the table, what needs attention per diskimage from the server's lifecycle status.
 */
import { ageSeconds } from '../../lib/status/age.js';
import { BUILD_COLUMNS, buildRows, diskimageAttention } from '../../lib/status/builds.js';
import { corruptJson, corruptLines, corruptRows } from '../../lib/status/corrupt.js';
import { renderTable } from '../../lib/status/table.js';
import {
  commandConfig, EXIT, readServerLiveness, runCommand, warnUnlessServerWell, withStore, type CommandContext, type CommandResult,
} from './shared.js';
import { LIFECYCLE_STATUS_KEY, type LifecycleStatus } from '../../lib/status/lifecycle-status.js';

/** Options of {@link dibImageList}. */
export interface DibImageListOptions extends CommandContext {
  /** Print `{ builds, diskimages }` as JSON instead of the table. */
  json?: boolean;
}

/** Lists builds (table or JSON); exit 0, or 2 for a config error. */
export function dibImageList(opts: DibImageListOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    await withStore(config, async (store) => {
      const [builds, status, pauses, corrupt] = await Promise.all([
        store.listBuilds(),
        store.getStatus<LifecycleStatus>(LIFECYCLE_STATUS_KEY),
        store.listPauses(),
        store.listCorrupt({ kinds: ['build', 'pause', 'build-request'] }),
      ]);
      const now = (opts.now ?? Date.now)();
      const diskimages = status?.value.diskimages ?? [];
      const server = await readServerLiveness(store, now);
      warnUnlessServerWell(out, server);
      if (opts.json) {
        const records = [...builds.map((b) => ({ ...b, age: ageSeconds(b.stateTime, now) })), ...corruptJson(corrupt, ['build'])];
        out.out(`${JSON.stringify({ builds: records, diskimages, held: status?.value.held ?? [] }, null, 2)}\n`);
        return;
      }
      out.out(renderTable(BUILD_COLUMNS, [...buildRows(builds, now), ...corruptRows(BUILD_COLUMNS, corrupt, ['build'])]));
      for (const line of diskimageAttention({ statuses: diskimages, builds, pauses, now })) out.out(`${line}\n`);
      for (const line of corruptLines(corrupt, ['build', 'pause', 'build-request'])) out.out(`${line}\n`);
      for (const why of status?.value.held ?? []) out.out(`deletion held: ${why}\n`);
    }, { readOnly: true });
    return EXIT.ok;
  });
}
