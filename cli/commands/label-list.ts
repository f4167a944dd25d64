/**
 * `nodepool label-list [--json]`: per label, its min-ready against the nodes that are ready,
 * allocated, in use and building, and the provider pools that serve it; under the table, the
 * labels no pool serves.
 */
import type { Config } from '../../lib/config/schema.js';
import { providerPools } from '../../lib/drivers/config-registry.js';
import { LABEL_COLUMNS, labelAttention, labelRow, labelSummaries, type ServingPool } from '../../lib/status/labels.js';
import { renderTable } from '../../lib/status/table.js';
import { commandConfig, EXIT, runCommand, withStore, type CommandContext, type CommandResult } from './shared.js';

/** Options of {@link labelList}. */
export interface LabelListOptions extends CommandContext {
  /** Print the label summaries as a JSON array. */
  json?: boolean;
}

/** Every pool of every configured provider, with the labels it serves. */
export function servingPools(config: Config): ServingPool[] {
  return config.providers.flatMap((p) => providerPools(p).map((pool) => ({ provider: p.name, pool: pool.name, labels: pool.labels })));
}

/** Lists labels; exit 0, or 2 for a config error. */
export function labelList(opts: LabelListOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    const nodes = await withStore(config, (store) => store.listNodes());
    const summaries = labelSummaries({ labels: config.labels, pools: servingPools(config), nodes });
    if (opts.json) {
      out.out(`${JSON.stringify(summaries, null, 2)}\n`);
      return EXIT.ok;
    }
    out.out(renderTable(LABEL_COLUMNS, summaries.map(labelRow)));
    for (const line of labelAttention(summaries)) out.out(`${line}\n`);
    return EXIT.ok;
  });
}
