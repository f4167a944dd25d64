/**
 * `nodepool request <label>... [--wait] [--timeout S] [--priority N] [--provider P]`: asks the
 * launchers for nodes. Without `--wait` the request outlives the command (it is not tied to
 * the CLI's session) and its id is printed; `nodepool request-list` follows it. With `--wait`
 * the request is ephemeral, so an interrupted CLI leaves nothing behind; once fulfilled the
 * nodes are taken in use (they stay until `nodepool release`) and printed as `list` does.
 * The action is lib/actions/node-request.ts `requestNodes`.
 */
import { requestNodes, requestWarnings, unknownLabels } from '../../lib/actions/node-request.js';
import type { NodeRequestRecord } from '../../lib/store/models.js';
import { renderNodes } from './list.js';
import { CommandFailure } from '../../lib/errors.js';
import {
  commandConfig, EXIT, runCommand, withStore, type CommandContext, type CommandResult,
  type LiveOutput,
} from './shared.js';
import { settled } from './action-refusal.js';

/** Seconds `--wait` waits when no `--timeout` is given. */
export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 600;

/** Who the CLI's requests and sessions name. */
export const CLI_REQUESTOR = 'nodepool request';

/** Options of {@link request}. */
export interface RequestCommandOptions extends CommandContext {
  labels: string[];
  wait?: boolean;
  timeoutSeconds?: number;
  priority?: number;
  provider?: string;
  json?: boolean;
  /** Aborting (Ctrl-C) ends `--wait`: the request is deleted and the exit code is 130. */
  signal?: AbortSignal;
  /** Where `--wait` reports state changes as they happen. */
  live?: LiveOutput;
}

/** Makes a request; exit 0, 1 when it failed or timed out, 3 for an unknown label, 130 when interrupted. */
export function request(opts: RequestCommandOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    settled(unknownLabels(config, opts.labels) ?? {});
    const timeoutSeconds = opts.timeoutSeconds ?? DEFAULT_REQUEST_TIMEOUT_SECONDS;
    if (!(timeoutSeconds > 0)) throw new CommandFailure(EXIT.usage, `--timeout must be a positive number of seconds, got ${timeoutSeconds}`);
    if (opts.priority !== undefined && !(Number.isInteger(opts.priority) && opts.priority >= 0 && opts.priority <= 999)) {
      throw new CommandFailure(EXIT.usage, `--priority must be an integer from 0 to 999, got ${opts.priority}`);
    }
    for (const w of requestWarnings(config, opts.provider)) out.err(`warning: ${w}\n`);
    const onUpdate = (r: NodeRequestRecord): void => out.err(`request ${r.id}: ${r.state}\n`);
    const wait = opts.wait ? { timeoutMs: timeoutSeconds * 1000, signal: opts.signal, onUpdate } : undefined;
    const answer = settled(await withStore(config, (store) => requestNodes({ store, config }, {
      labels: opts.labels, priority: opts.priority, provider: opts.provider, requestor: CLI_REQUESTOR, wait,
    })));
    if (!answer.waited) out.out(opts.json ? `${JSON.stringify(answer.request, null, 2)}\n` : `${answer.request.id}\n`);
    else out.out(renderNodes(answer.nodes, new Set(), (opts.now ?? Date.now)(), { json: opts.json }));
    return EXIT.ok;
  }, opts.live);
}
