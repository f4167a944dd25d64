/**
 * Runs a node action through the consumer library (lib/client) on the caller's store: a client
 * session owned by the requestor for the action's length, and the client's errors turned into
 * refusals naming the node or request.
 */
import type { Config } from '../config/schema.js';
import {
  ClientError, NodeLockedError, NodeNotFoundError, NodeStateError, RequestNotFoundError,
} from '../errors.js';
import { NodepoolClient } from '../client/nodepool-client.js';
import type { Store } from '../store/store.js';
import { refuse, type Refused } from './action-result.js';

/** What the node actions need. */
export interface NodeActionContext {
  store: Store;
  /** For the session's TTL (`launcher.session-ttl`) and the labels and providers named. */
  config: Config;
}

/** The refusals {@link withNodeClient} answers. */
export type NodeClientRefusal = 'unknown-node' | 'unknown-request' | 'wrong-state' | 'locked' | 'failed';

/** Maps a client error to a refusal; anything else is returned as it is, to be thrown. */
export function clientRefusal(err: unknown): Refused<NodeClientRefusal> | undefined {
  if (err instanceof NodeNotFoundError) return refuse('unknown-node', `Node ${err.nodeId} not found`);
  if (err instanceof RequestNotFoundError) return refuse('unknown-request', `Node request ${err.requestId} not found`);
  if (err instanceof NodeStateError) return refuse('wrong-state', err.message);
  if (err instanceof NodeLockedError) return refuse('locked', err.message);
  if (err instanceof ClientError) return refuse('failed', err.message);
  return undefined;
}

/** Runs `fn` with a client over `ctx.store` owned by `requestor`; client errors become refusals. */
export async function withNodeClient<T>(ctx: NodeActionContext, requestor: string, fn: (client: NodepoolClient) => Promise<T>): Promise<T | Refused<NodeClientRefusal>> {
  const client = await NodepoolClient.open({ config: ctx.config, store: ctx.store, requestor });
  try {
    return await fn(client);
  } catch (err) {
    const refused = clientRefusal(err);
    if (refused) return refused;
    throw err;
  } finally {
    await client.close();
  }
}
