/**
 * Operator action: ask the launchers for nodes (`nodepool request`). Without `wait` the request
 * outlives the action (it is not tied to a session) and is answered at once; with `wait` it is
 * ephemeral (an interrupted caller leaves nothing behind), and once fulfilled its nodes are
 * taken in use (they stay until released) and answered.
 */
import { RequestFailedError, RequestTimeoutError } from '../errors.js';
import type { NodeRecord, NodeRequestRecord } from '../store/models.js';
import type { Config } from '../config/schema.js';
import { refuse, type ActionResult, type Refused } from './action-result.js';
import { withNodeClient, type NodeActionContext, type NodeClientRefusal } from './node-client.js';

/** Who the requests and sessions name by default. */
export const DEFAULT_REQUESTOR = 'nodepool request';

/** Arguments of {@link requestNodes}. */
export interface NodeRequestArgs {
  /** In order, repeats allowed; each must be a configured label. */
  labels: readonly string[];
  /** 0 to 999, lower served first. */
  priority?: number;
  /** A preferred provider (a warning when the config does not name it: the launchers ignore it). */
  provider?: string;
  /** Default {@link DEFAULT_REQUESTOR}. */
  requestor?: string;
  /** Wait for the nodes. */
  wait?: {
    timeoutMs: number;
    /** Aborting deletes the request and answers `interrupted`. */
    signal?: AbortSignal;
    /** Told of each state change of the request. */
    onUpdate?: (request: NodeRequestRecord) => void;
  };
}

/** The answer of {@link requestNodes}: the request made, or (with `wait`) the nodes taken in use. */
export type NodeRequestResult = ActionResult<
  ({ waited: false; request: NodeRequestRecord } | { waited: true; nodes: NodeRecord[] }) & { warnings: string[] },
  NodeClientRefusal | 'unknown-label' | 'invalid-argument' | 'timed-out' | 'interrupted'>;

/** A refusal naming the labels the config does not define, or undefined when it defines them all. */
export function unknownLabels(config: Config, labels: readonly string[]): Refused<'unknown-label'> | undefined {
  const known = new Set(config.labels.map((l) => l.name));
  const unknown = [...new Set(labels.filter((l) => !known.has(l)))];
  if (unknown.length === 0) return undefined;
  return refuse('unknown-label', `Label${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} not defined in ${config.file}`);
}

/** What the requester should know before the request is made: a preferred provider the config does not name. */
export function requestWarnings(config: Config, provider: string | undefined): string[] {
  return provider !== undefined && !config.providers.some((p) => p.name === provider)
    ? [`provider ${provider} is not in ${config.file}; the launchers ignore the preference`] : [];
}

/** Makes a node request, and with `wait` waits for and takes its nodes. */
export async function requestNodes(ctx: NodeActionContext, args: NodeRequestArgs): Promise<NodeRequestResult> {
  const { config } = ctx;
  const unknown = unknownLabels(config, args.labels);
  if (unknown) return unknown;
  if (args.labels.length === 0) return refuse('invalid-argument', 'A node request needs at least one label');
  if (args.wait && !(args.wait.timeoutMs > 0)) return refuse('invalid-argument', `The timeout must be positive, got ${args.wait.timeoutMs} ms`);
  if (args.priority !== undefined && !(Number.isInteger(args.priority) && args.priority >= 0 && args.priority <= 999)) {
    return refuse('invalid-argument', `The priority must be an integer from 0 to 999, got ${args.priority}`);
  }
  const warnings = requestWarnings(config, args.provider);
  const base = { priority: args.priority, provider: args.provider };
  const wait = args.wait;
  const answer = await withNodeClient(ctx, args.requestor ?? DEFAULT_REQUESTOR, async (client): Promise<NodeRequestResult> => {
    if (!wait) {
      const request = await client.request(args.labels, { ...base, ephemeral: false });
      return { ok: true, waited: false, request, warnings, message: `Node request ${request.id} made` };
    }
    try {
      const nodes = await client.requestNodes(args.labels, { ...base, ephemeral: true, timeoutMs: wait.timeoutMs, signal: wait.signal, onUpdate: wait.onUpdate });
      return { ok: true, waited: true, nodes, warnings, message: `Nodes ${nodes.map((n) => n.id).join(', ')} in use` };
    } catch (err) {
      if (wait.signal?.aborted) return refuse('interrupted', 'Interrupted; the request was deleted');
      if (err instanceof RequestFailedError) return refuse('failed', `Node request ${err.requestId} failed: ${err.reason ?? 'no reason recorded'}`);
      if (err instanceof RequestTimeoutError) return refuse('timed-out', `${err.message}; the request was deleted`);
      throw err;
    }
  });
  return answer;
}
