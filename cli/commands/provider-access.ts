/**
 * What the commands that talk to providers (`delete --now`, `alien-image-list`) get besides
 * the config and the store: this host's driver host accesses and image services. Apart from
 * shared.ts so that the other commands, `config-validate` and `--help` load no driver code.
 */
import type { Config } from '../../lib/config/schema.js';
import { noDriverHosts, type DriverHosts } from '../../lib/drivers/core/driver-hosts.js';
import { CommandFailure } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { EXIT } from './shared.js';

/**
 * Makes this host's driver host accesses and image services for a loaded config (bin passes
 * bin/daemon.ts `processImageServices`; lib and cli never read the environment themselves).
 */
export type ImageServicesFor = (config: Config, log: Logger) => DriverHosts;

/** The host accesses when none were given: every provider's image service and access reject, naming why. */
export const NO_IMAGE_SERVICES: ImageServicesFor = () => noDriverHosts((provider) =>
  new CommandFailure(EXIT.failed, `no credentials in this context for provider ${provider.name}`));

/** What commands that talk to providers get besides the CommandContext. */
export interface ProviderAccess {
  /** Default: {@link NO_IMAGE_SERVICES}. */
  imageServices?: ImageServicesFor;
  /** For provider and cloud client messages (default: silent). */
  log?: Logger;
}
