/**
 * The write API's authenticator across config reloads: it answers with the authenticators last
 * loaded, and `reload` swaps in those of a new config once their keys have been read, so a
 * rotated secret or key file takes effect on SIGHUP. A reload that fails (an unusable key file)
 * keeps the authenticators before it and rejects, for the caller to log.
 */
import type { AuthenticatorConfig, AuthOutcome, RequestAuthenticator } from './auth-types.js';
import { loadAuthenticators, type LoadAuthenticatorsOptions } from './authenticators.js';

export class ReloadableAuthenticator implements RequestAuthenticator {
  private current: RequestAuthenticator;
  /** The reload in progress; reloads run one at a time, in call order. */
  private reloading: Promise<void> = Promise.resolve();

  constructor(first: RequestAuthenticator, private readonly opts: LoadAuthenticatorsOptions = {}) {
    this.current = first;
  }

  get enabled(): boolean {
    return this.current.enabled;
  }

  authenticate(authorization: string | undefined): Promise<AuthOutcome> {
    return this.current.authenticate(authorization);
  }

  /** Thrown (rejected): ConfigError naming the unusable key file and its key; the authenticators before stay. */
  reload(configs: readonly AuthenticatorConfig[]): Promise<void> {
    const next = this.reloading.then(async () => {
      this.current = await loadAuthenticators(configs, this.opts);
    });
    this.reloading = next.catch(() => undefined);
    return next;
  }
}
