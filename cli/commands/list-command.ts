/**
 * What the listing commands share: load the config, open the store, make the list's view
 * (lib/status/list-views.ts, the same the web serves) and print it, exit 0. The image lists
 * first warn when no server is running or its passes fail.
 */
import type { StatusSource } from '../../lib/status/list-views.js';
import {
  commandConfig, EXIT, readServerLiveness, runCommand, warnUnlessServerWell, withStore, type CommandContext, type CommandResult,
} from './shared.js';

/** Options of every listing command. */
export interface ListCommandOptions extends CommandContext {
  /** Print the list's JSON form instead of the table. */
  json?: boolean;
}

/** How a listing command reads. */
export interface ListCommandMode {
  /** Open the store read-only (nothing created in a ZooKeeper tree). */
  readOnly?: boolean;
  /** Warn on stderr when the server is down or failing (its status may be out of date). */
  warnServer?: boolean;
}

/** Runs a listing command: `render` returns what to print on stdout. */
export function runListCommand(opts: CommandContext, mode: ListCommandMode, render: (src: StatusSource) => Promise<string>): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    const clock = opts.now ?? Date.now;
    const text = await withStore(config, async (store) => {
      if (mode.warnServer) warnUnlessServerWell(out, await readServerLiveness(store, clock()));
      return render({ store, config: () => config, clock });
    }, mode.readOnly ? { readOnly: true } : {});
    out.out(text);
    return EXIT.ok;
  });
}
