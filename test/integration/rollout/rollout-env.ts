/**
 * Shared set-up of the image rollout tests (issue 24): the run's full loopback cloud (real
 * Nova with the fake virt driver, real Glance), Glance images made for a test (a tiny raw
 * image Nova boots, or a `queued` one without data that Nova refuses to boot), ready upload
 * records of two builds written straight through the Store API (no builder: the server runs
 * launcher-only), an openstack provider whose label boots the diskimage, and one launch
 * through the real launcher: a request, its node accepted, the Glance image of its Nova
 * server read, the node returned.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { NodepoolClient } from '../../../lib/client/nodepool-client.js';
import { loadCloud } from '../../../lib/drivers/openstack/clouds-yaml.js';
import { GlanceClient } from '../../../lib/drivers/openstack/glance.js';
import { KeystoneSession } from '../../../lib/drivers/openstack/keystone.js';
import { waitFor } from '../../../lib/lifecycle.js';
import type { NodeRecord, UploadRecord } from '../../../lib/store/models.js';
import type { Store } from '../../../lib/store/store.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { useNovaCloud, type NovaCloud } from '../../support/openstack-full.js';
import { stopAllProcesses } from '../../support/processes.js';

/** The diskimage every rollout test boots. */
export const DISKIMAGE = 'deb';

/** The full cloud and a demo-project session for the images the tests make. */
export class RolloutCloud {
  private readonly images: string[] = [];

  private constructor(readonly nova: NovaCloud, private readonly session: KeystoneSession, private readonly glance: GlanceClient, private readonly dir: string) {}

  static async open(): Promise<RolloutCloud> {
    const nova = await useNovaCloud();
    const session = await KeystoneSession.authenticate(await loadCloud(nova.cloud, { path: nova.cloudsFile }));
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-rollout-'));
    return new RolloutCloud(nova, session, new GlanceClient(session, { pollIntervalMs: 200 }), dir);
  }

  /** A unique name for this file's provider or image (the cloud is shared with other files). */
  static unique(prefix: string): string {
    return `${prefix}-${randomUUID().slice(0, 8)}`;
  }

  /** An active Glance image (64 KiB of raw zeros: the fake virt driver boots anything). */
  async bootableImage(name: string): Promise<string> {
    const file = path.join(this.dir, `${name}.raw`);
    await writeFile(file, Buffer.alloc(64 * 1024));
    const { id } = await this.glance.uploadImage({ name, diskFormat: 'raw', properties: {}, filePath: file });
    this.images.push(id);
    return id;
  }

  /** A Glance image that stays `queued` (no data): Nova refuses every boot of it ("Image ... is not active"). */
  async unbootableImage(name: string): Promise<string> {
    const res = await this.session.request(`${this.glance.baseUrl}/v2/images`, {
      method: 'POST', service: 'Glance', json: { name, disk_format: 'raw', container_format: 'bare', visibility: 'private' },
    });
    const id = (JSON.parse(res.body) as { id: string }).id;
    this.images.push(id);
    return id;
  }

  /** The Glance image id a Nova server was booted from. */
  async serverImage(serverId: string): Promise<string | undefined> {
    const res = await this.session.request(`${this.session.endpoint('compute')}/servers/${serverId}`, { method: 'GET', service: 'Nova', expect: [200, 404] });
    if (res.status === 404) return undefined;
    const image = (JSON.parse(res.body) as { server: { image?: { id?: string } | string } }).server.image;
    return typeof image === 'object' ? image.id : undefined;
  }

  /** Servers of `provider` in Nova (by the launcher's metadata). */
  async serversOf(provider: string): Promise<number> {
    return (await this.nova.listAllServers()).filter((s) => s.metadata.nodepool_provider_name === provider).length;
  }

  /** Deletes the images this file made, the session and the temp dir. */
  async close(): Promise<void> {
    for (const id of this.images) await this.glance.deleteImage(id).catch(() => undefined);
    this.session.close();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * Writes a ready build of `diskimage` and its ready uploads, one to each of `providers` (in that
 * order), all of the Glance image `externalId`.
 */
export async function readyUploads(store: Store, providers: readonly string[], externalId: string, diskimage = DISKIMAGE): Promise<UploadRecord[]> {
  const build = await store.createBuild({ diskimage, formats: ['raw'] });
  await store.updateBuild(build.id, { state: 'ready' });
  const out: UploadRecord[] = [];
  for (const provider of providers) {
    const upload = await store.createUpload({ buildId: build.id, provider, imageName: diskimage, externalName: `${diskimage}-${build.id}` });
    const ready = await store.updateUpload(upload.id, { state: 'ready', externalId, format: 'raw' });
    assert.ok(ready);
    out.push(ready);
  }
  return out;
}

/** {@link readyUploads} to one provider. */
export async function readyUpload(store: Store, provider: string, externalId: string, diskimage = DISKIMAGE): Promise<UploadRecord> {
  const [upload] = await readyUploads(store, [provider], externalId, diskimage);
  assert.ok(upload);
  return upload;
}

/** Knobs of {@link cloudProvider}. */
export interface CloudProviderOptions {
  /** The provider diskimage's `rollout:` (raw YAML keys). */
  rollout?: Record<string, unknown>;
  /** The label boots the diskimage; default `disk`. */
  label?: string;
  maxServers?: number;
  launchRetries?: number;
}

/**
 * An openstack provider on the full cloud: one pool on the private network, label → diskimage
 * `deb` on m1.tiny, no host-key check. launch-timeout 300 s: a bound for a loaded machine (at
 * load 10-12 a boot went past 120 s, and the abort test saw a timeout where it expects only
 * Nova's refusals).
 */
export function cloudProvider(nova: NovaCloud, name: string, o: CloudProviderOptions = {}): Record<string, unknown> {
  return {
    name, driver: 'openstack', cloud: nova.cloud, 'region-name': nova.region, 'launch-timeout': 300, 'launch-retries': o.launchRetries ?? 3,
    diskimages: [{ name: DISKIMAGE, username: 'debian', ...(o.rollout ? { rollout: o.rollout } : {}) }],
    pools: [{
      name: 'main', networks: [nova.network.name], 'host-key-checking': false, 'auto-floating-ip': false, 'max-servers': o.maxServers ?? 10,
      labels: [{ name: o.label ?? 'disk', diskimage: DISKIMAGE, 'flavor-name': 'm1.tiny' }],
    }],
  };
}

/** What one launch booted. */
export interface Launched {
  node: NodeRecord;
  /** The upload id the node record names (`image`). */
  upload: string;
  /** The Glance image of its Nova server. */
  glanceImage: string | undefined;
}

/**
 * Launches `count` nodes of `label` at once (one request each), reads what each booted, and
 * returns them. The nodes are released without waiting for their servers to go; a failed
 * request is thrown once the others' nodes are released.
 */
export async function launch(cloud: RolloutCloud, client: NodepoolClient, label: string, count = 1, timeoutMs = 300_000): Promise<Launched[]> {
  const settled = await Promise.allSettled(Array.from({ length: count }, () => client.requestNodes([label], { timeoutMs })));
  const out: Launched[] = [];
  for (const node of settled.flatMap((r) => (r.status === 'fulfilled' ? r.value : []))) {
    out.push({ node, upload: node.image ?? '', glanceImage: node.externalId ? await cloud.serverImage(node.externalId) : undefined });
    await client.release(node.id);
  }
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  for (const l of out) assert.ok(l.upload && l.node.externalId, `node ${l.node.id} names its upload and server`);
  return out;
}

/**
 * Returns every node of `provider` still held (a test that failed half-way), then waits
 * (bounded) until no server of it is left in Nova and no node in the store.
 */
export async function drained(cloud: RolloutCloud, sys: LauncherSystem, provider: string): Promise<void> {
  await waitFor(async () => {
    for (const n of await sys.store.listNodes({ provider, states: ['ready', 'in-use', 'hold'] })) {
      await sys.store.updateNode(n.id, { state: 'used' }).catch(() => undefined);
    }
    return (await cloud.serversOf(provider)) === 0 && (await sys.store.listNodes({ provider })).length === 0;
  }, { timeoutMs: 180_000, what: `no server or node of ${provider} left`, intervalMs: 1000 });
}

/** A file's parts: the cloud, the launcher system (its server, store and config) and a client. */
export interface RolloutParts {
  cloud: RolloutCloud;
  sys: LauncherSystem;
  client: NodepoolClient;
}

/** {@link oneProviderSystem}'s parts and the two ready uploads it wrote (older first), with their Glance images by upload id. */
export interface OneProvider extends RolloutParts {
  older: UploadRecord;
  newer: UploadRecord;
  images: Map<string, string>;
}

/**
 * The set-up most rollout files share: the cloud, a launcher-only nodepool-server on SQLite
 * whose one provider `provider` (options `o`) boots the diskimage as label `disk`, and ready
 * uploads of two builds to it, each its own Glance image; `newerImage: 'unbootable'` gives the
 * newer one an image Nova refuses to boot.
 */
export async function oneProviderSystem(provider: string, o: CloudProviderOptions = {}, newerImage: 'bootable' | 'unbootable' = 'bootable'): Promise<OneProvider> {
  const cloud = await RolloutCloud.open();
  const sys = await LauncherSystem.create({
    labels: [{ name: 'disk' }],
    providers: [cloudProvider(cloud.nova, provider, o)],
    extra: { 'clouds-file': cloud.nova.cloudsFile, diskimages: [{ name: DISKIMAGE }] },
  });
  const [olderImage, newImage] = await Promise.all([cloud.bootableImage(`${provider}-old`),
    newerImage === 'bootable' ? cloud.bootableImage(`${provider}-new`) : cloud.unbootableImage(`${provider}-queued`)]);
  const older = await readyUpload(sys.store, provider, olderImage);
  const newer = await readyUpload(sys.store, provider, newImage);
  await sys.startServer();
  return { cloud, sys, client: await sys.client(), older, newer, images: new Map([[older.id, olderImage], [newer.id, newImage]]) };
}

/** Ends a file: returns and waits out the nodes of `providers`, stops the system, deletes the images, stops every process started. */
export async function closeParts(parts: Partial<RolloutParts> | undefined, providers: readonly string[]): Promise<void> {
  const { cloud, sys } = parts ?? {};
  if (cloud && sys) {
    for (const p of providers) await drained(cloud, sys, p).catch((err: unknown) => console.error(`drain: ${String(err)}`));
  }
  await sys?.stop();
  await cloud?.close();
  await stopAllProcesses();
}
