/**
 * `nodepool info <provider> [--json]`: what the state store holds for one provider: its
 * images (provider image name → build ids with an upload record) and its nodes, and whether
 * the config's server runs the image lifecycle (`off (launcher-only: …)` without
 * gearman-servers). Useful before `nodepool erase` of a provider that left the config.
 */
import { imageLifecycleMode } from '../../lib/config/gearman-servers.js';
import { renderTable } from '../../lib/status/table.js';
import type { NodeRecord, UploadRecord } from '../../lib/store/models.js';
import { CommandFailure } from '../../lib/errors.js';
import { commandConfig, EXIT, runCommand, withStore, type CommandContext, type CommandResult } from './shared.js';

/** Options of {@link info}. */
export interface InfoOptions extends CommandContext {
  provider: string;
  json?: boolean;
}

/** One provider image and the builds uploaded as it. */
export interface ProviderImageInfo {
  imageName: string;
  buildIds: string[];
}

/** Uploads grouped by provider image name (sorted), build ids sorted and unique. */
export function providerImages(uploads: readonly UploadRecord[]): ProviderImageInfo[] {
  const byImage = new Map<string, Set<string>>();
  for (const u of uploads) byImage.set(u.imageName, (byImage.get(u.imageName) ?? new Set()).add(u.buildId));
  return [...byImage].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([imageName, ids]) => ({ imageName, buildIds: [...ids].sort() }));
}

/** Shows a provider's records; exit 0, or 3 when neither the config nor the store knows it. */
export function info(opts: InfoOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    const { uploads, nodes } = await withStore(config, async (store) => ({
      uploads: await store.listUploads({ provider: opts.provider }),
      nodes: await store.listNodes({ provider: opts.provider }),
    }));
    const configured = config.providers.some((p) => p.name === opts.provider);
    if (!configured && uploads.length === 0 && nodes.length === 0) {
      throw new CommandFailure(EXIT.notFound, `Provider ${opts.provider} not found in ${config.file} or in the state store`);
    }
    const images = providerImages(uploads);
    if (opts.json) {
      out.out(`${JSON.stringify({ provider: opts.provider, configured, imageLifecycle: imageLifecycleMode(config), images, nodes }, null, 2)}\n`);
      return EXIT.ok;
    }
    out.out(`State data for provider ${opts.provider}${configured ? '' : ` (not in ${config.file})`}\n`);
    out.out('Image builds:\n');
    out.out(renderTable(['Image Name', 'Build IDs'], images.map((i) => [i.imageName, i.buildIds.join(',')])));
    out.out('Nodes:\n');
    out.out(renderTable(['ID', 'Server ID', 'State'], nodes.map((n: NodeRecord) => [n.id, n.externalId ?? '', n.state])));
    // A launcher-only config (diskimages, no gearman-servers): its images are built and uploaded elsewhere.
    if (config.diskimages.length > 0 && config.gearmanServers.length === 0) out.out(`Image lifecycle: ${imageLifecycleMode(config)}\n`);
    return EXIT.ok;
  });
}
