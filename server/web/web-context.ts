/**
 * What the web modules (write API, build logs, console) are made from (issue 25): the store,
 * the current config, the request authenticator, the server's status source and health, a
 * clock and a logger. Each module exports a factory `(ctx: WebContext) => WebModule`.
 */
import type { Config } from '../../lib/config/schema.js';
import type { Logger } from '../../lib/log.js';
import type { LoopHealth } from '../../lib/periodic-loop.js';
import type { Store } from '../../lib/store/store.js';
import type { RequestAuthenticator } from '../../lib/web-auth/auth-types.js';
import type { StatusSource } from './status-views.js';

export interface WebContext {
  store: Store;
  /** The config as reloaded (read at each request). */
  config: () => Config;
  auth: RequestAuthenticator;
  status: StatusSource;
  loops: () => LoopHealth[];
  /** Whether every provider has started. */
  started: () => boolean;
  clock: () => number;
  log: Logger;
}
