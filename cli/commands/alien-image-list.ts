/**
 * `nodepool alien-image-list [provider] [--json] [--timeout S]`: images in the clouds of
 * image-managing providers that carry nodepool's build/upload properties but that no upload
 * record accounts for (`Provider, Name, Image ID`). It only lists; the server's leak check
 * deletes them. Each provider gets `--timeout` seconds, so a cloud that stops answering is
 * reported as a failed provider instead of holding the command.
 */
import { alienImages, type AlienImage } from '../../lib/client/alien-images.js';
import type { Config } from '../../lib/config/schema.js';
import { imageTargets, type ProviderConfig } from '../../lib/drivers/config-registry.js';
import { coerceError } from '../../lib/errors.js';
import { silentLogger } from '../../lib/log.js';
import { renderTable } from '../../lib/status/table.js';
import type { Store } from '../../lib/store/store.js';
import {
  commandConfig, EXIT, requireProvider, runCommand, withStore, type CommandContext, type CommandResult,
} from './shared.js';
import { NO_IMAGE_SERVICES, type ProviderAccess } from './provider-access.js';

/** Options of {@link alienImageList}. */
export interface AlienImageListOptions extends CommandContext, ProviderAccess {
  /** Only this provider. */
  provider?: string;
  json?: boolean;
  /** Bound of one provider's listing (authentication included); default {@link DEFAULT_ALIEN_LIST_TIMEOUT_SECONDS}. */
  timeoutSeconds?: number;
}

/** Seconds one provider's listing may take when no `--timeout` is given. */
export const DEFAULT_ALIEN_LIST_TIMEOUT_SECONDS = 30;

/**
 * Resolves or rejects as `work` does, or rejects once `seconds` have passed and then aborts
 * the signal handed to `work` (the image listing's request is cancelled; authentication is not).
 */
async function within<T>(seconds: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const abort = new AbortController();
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const err = new Error(`no answer within ${seconds} s (--timeout)`);
      reject(err);
      abort.abort(err);
    }, seconds * 1000);
  });
  try {
    return await Promise.race([work(abort.signal), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Alien images found, and one message per provider whose images could not be listed. */
interface Scan {
  aliens: AlienImage[];
  failures: string[];
}

/**
 * Lists each provider's images through its driver's image service (this host's own
 * credentials), then reads its uploads: images first, so an upload that starts meanwhile is
 * never called alien.
 */
async function scan(providers: readonly ProviderConfig[], config: Config, store: Store, opts: AlienImageListOptions): Promise<Scan> {
  const result: Scan = { aliens: [], failures: [] };
  const timeoutSeconds = opts.timeoutSeconds ?? DEFAULT_ALIEN_LIST_TIMEOUT_SECONDS;
  for (const p of providers) {
    const log = (opts.log ?? silentLogger()).child({ component: 'alien-image-list', provider: p.name });
    const services = (opts.imageServices ?? NO_IMAGE_SERVICES)(config, log);
    try {
      const images = await within(timeoutSeconds, async (signal) => (await services(p)).list({}, signal));
      result.aliens.push(...alienImages(p.name, images, await store.listUploads({ provider: p.name })));
    } catch (err) {
      result.failures.push(`Listing images of provider ${p.name} failed: ${coerceError(err).message}`);
    }
  }
  return result;
}

/** Lists alien images; exit 0, 1 when a provider's images could not be listed, 3 for an unknown provider. */
export function alienImageList(opts: AlienImageListOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    const providers = opts.provider === undefined ? config.providers : [requireProvider(config, opts.provider)];
    const managing = providers.filter((p) => imageTargets(p).length > 0);
    if (opts.provider !== undefined && managing.length === 0) out.err(`Provider ${opts.provider} does not manage images\n`);
    const { aliens, failures } = await withStore(config, (store) => scan(managing, config, store, opts));
    for (const f of failures) out.err(`${f}\n`);
    if (opts.json) out.out(`${JSON.stringify(aliens, null, 2)}\n`);
    else out.out(renderTable(['Provider', 'Name', 'Image ID'], aliens.map((a) => [a.provider, a.name, a.externalId])));
    return failures.length ? EXIT.failed : EXIT.ok;
  });
}
