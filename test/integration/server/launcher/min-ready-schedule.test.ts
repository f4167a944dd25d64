/**
 * `labels[].min-ready-schedule` in a running nodepool-server (issue 24 §4): on a real SQLite
 * store and the loopback Nova, with the server's clock (store and launcher) set just before a
 * boundary on Monday 30 March 2026, Berlin time. Before 07:00 the plain min-ready holds; moved
 * past 07:00 the launcher tops up to the scheduled value; past 07:10 (value 0) it boots nothing
 * more and leaves the surplus ready nodes alone. The clock runs at real speed from a settable
 * offset, so only the jumps are virtual. label-list shows the value and the next change.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import yaml from 'js-yaml';
import { loadConfig } from '../../../../lib/config/load.js';
import type { Config } from '../../../../lib/config/schema.js';
import { waitFor } from '../../../../lib/lifecycle.js';
import { labelListView } from '../../../../lib/status/list-views.js';
import type { NodeRecord } from '../../../../lib/store/models.js';
import { NodepoolServer } from '../../../../server/main.js';
import { testImageServices } from '../../../support/image-services.js';
import { useNovaCloud, type NovaCloud } from '../../../support/openstack-full.js';
import { testLogger } from '../../../support/test-log.js';

const LABEL = 'sched-tiny';

void describe('launcher: min-ready by schedule', () => {
  let nova: NovaCloud;
  let dir: string;
  let config: Config;
  let server: NodepoolServer | undefined;
  let offset = 0;
  const clock = (): number => Date.now() + offset;
  /** Sets the server's clock to `iso` (it runs on from there). */
  const setClock = (iso: string): void => {
    offset = Date.parse(iso) - Date.now();
  };
  const provider = `sched-${process.pid}`;

  before(async () => {
    nova = await useNovaCloud();
    dir = await mkdtemp(path.join(os.tmpdir(), 'min-ready-schedule-'));
    await writeFile(path.join(dir, 'nodepool.yaml'), yaml.dump({
      'state-dir': path.join(dir, 'state'), 'images-dir': path.join(dir, 'images'), 'build-log-dir': path.join(dir, 'logs'),
      'clouds-file': nova.cloudsFile,
      // Sessions outlive the clock's jumps (minutes).
      launcher: { interval: 0.2, 'delete-interval': 0.5, 'cleanup-interval': 1, 'session-ttl': 3600 },
      labels: [{
        name: LABEL, 'min-ready': 1,
        'min-ready-schedule': [
          { cron: '0 7 30 3 *', 'min-ready': 3, timezone: 'Europe/Berlin' },
          { cron: '10 7 30 3 *', 'min-ready': 0, timezone: 'Europe/Berlin' },
        ],
      }],
      providers: [{
        name: provider, driver: 'openstack', cloud: nova.cloud, 'region-name': nova.region, 'launch-timeout': 60,
        'cloud-images': [{ name: nova.image.name, username: 'cirros' }],
        pools: [{
          name: 'main', networks: [nova.network.name], 'host-key-checking': false, 'max-servers': 5,
          labels: [{ name: LABEL, 'cloud-image': nova.image.name, 'flavor-name': 'm1.tiny' }],
        }],
      }],
    }));
    config = loadConfig(path.join(dir, 'nodepool.yaml'));
  });
  after(async () => {
    if (server) {
      // The cloud is shared with other files: delete this file's servers through the launcher.
      await waitFor(async () => {
        for (const n of await server!.store.listNodes({ provider })) {
          if (n.state === 'ready') await server!.store.updateNode(n.id, { state: 'used' }).catch(() => undefined);
        }
        return (await nova.listAllServers()).every((s) => s.metadata.nodepool_provider_name !== provider);
      }, { timeoutMs: 90_000, what: `no server of ${provider} left`, intervalMs: 500 }).catch((err: unknown) => console.error(String(err)));
      await server.stop();
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const nodes = async (): Promise<NodeRecord[]> => (await server!.store.listNodes({ provider })).filter((n) => n.labels.includes(LABEL));
  const ready = async (): Promise<number> => (await nodes()).filter((n) => n.state === 'ready' && n.allocatedTo === null).length;
  /** Waits for `n` more passes of the min-ready loop (a pass reads the clock and the store). */
  const minReadyPasses = async (n: number): Promise<void> => {
    const passes = (): number => server!.loopHealth().find((l) => l.name === 'min-ready')?.passes ?? 0;
    const target = passes() + n;
    await waitFor(() => passes() >= target, { timeoutMs: 30_000, what: `${n} min-ready passes` });
  };
  const view = async (): Promise<{ row: string[]; json: unknown }> => {
    const v = await labelListView({ store: server!.store, config: () => config, clock });
    assert.deepEqual(v.columns.at(-1), 'Next Min Ready');
    return { row: v.rows[0]!, json: (v.json as unknown[])[0] };
  };

  it('holds the plain value before 07:00, tops up to 3 after it and boots nothing after 07:10, keeping the surplus', async () => {
    setClock('2026-03-30T04:50:00Z'); // 06:50 CEST: ten minutes for the first boot, however loaded the machine
    server = await NodepoolServer.create({ config, log: testLogger(), clock, hostname: 'sched', imageServices: testImageServices(() => config.cloudsFile, testLogger()) });
    await waitFor(async () => (await ready()) === 1, { timeoutMs: 90_000, what: 'the plain min-ready node', intervalMs: 200 });
    await minReadyPasses(5);
    assert.equal((await nodes()).length, 1, 'only the plain min-ready before 07:00');
    let v = await view();
    assert.deepEqual([v.row[1], v.row.at(-1)], ['1', '3 at 2026-03-30 05:00 UTC']);
    assert.equal(clock() < Date.parse('2026-03-30T05:00:00Z'), true, 'still before the boundary');

    setClock('2026-03-30T05:00:05Z'); // 07:00:05 CEST
    await waitFor(async () => (await ready()) === 3, { timeoutMs: 180_000, what: 'three ready nodes after 07:00', intervalMs: 200 });
    v = await view();
    assert.deepEqual([v.row[1], v.row.at(-1)], ['3', '0 at 2026-03-30 05:10 UTC']);
    assert.deepEqual((v.json as { minReadySchedule: unknown }).minReadySchedule, { source: 'schedule', nextChange: { at: Date.parse('2026-03-30T05:10:00Z'), minReady: 0 } });

    setClock('2026-03-30T05:10:05Z'); // 07:10:05 CEST: min-ready 0 until the period lapses 8 days later
    await minReadyPasses(5);
    assert.equal(await ready(), 3, 'the surplus ready nodes are not deleted by min-ready');
    v = await view();
    assert.deepEqual([v.row[1], v.row.at(-1)], ['0', '1 at 2026-04-07 05:10 UTC']);

    for (const n of await nodes()) await server.store.updateNode(n.id, { state: 'used' });
    await waitFor(async () => (await nodes()).length === 0, { timeoutMs: 90_000, what: 'the used nodes deleted', intervalMs: 200 });
    await minReadyPasses(5);
    assert.deepEqual(await nodes(), [], 'no node booted while the schedule says 0');
  });
});
