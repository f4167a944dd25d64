/**
 * Placement and the circuit breaker (issue 35 §2–§4) in an in-process nodepool-server with two
 * openstack providers, each on its own scripted Nova (real HTTP, the real driver; servers
 * ACTIVE at once). Both serve `small`; `only-a` and `only-b` are served by one each.
 * - With provider A at 80 % of its max-servers and B at 10 %, the next `small` requests go to B.
 * - A request for A's label while A is at max-servers waits, and request-list says why (the
 *   console's requests page too, for the breaker).
 * - A's Nova made to fail every create: after `failures` launch failures A's breaker opens
 *   (published in the store), `small` requests all go to B and A sees no create while it holds;
 *   a request only A serves waits with the reason `breaker-open`; once the fault is gone, the
 *   probe after the backoff serves it and closes the breaker.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import yaml from 'js-yaml';
import { waitFor } from '../../../lib/lifecycle.js';
import { loadConfig } from '../../../lib/config/load.js';
import { requestListView } from '../../../lib/status/list-views.js';
import { readRequests, requestsPage } from '../../../server/web/console/pool-pages.js';
import type { NodepoolClient } from '../../../lib/client/nodepool-client.js';
import type { NodeRecord } from '../../../lib/store/models.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { ScriptedCloud } from '../../support/scripted-cloud.js';
import { playNova } from '../web/fake-nova.js';

const BACKOFF_S = 8;

/** A provider on scripted cloud `cloud` with one pool of `max` servers serving `small` and `only-<name>`. */
function provider(name: string, max: number): Record<string, unknown> {
  const label = (l: string): Record<string, unknown> => ({ name: l, 'cloud-image': 'cirros', 'flavor-name': 'm1.tiny' });
  return {
    name: `cloud-${name}`, driver: 'openstack', cloud: name, 'launch-retries': 1, 'launch-timeout': 10,
    'cloud-images': [{ name: 'cirros', 'image-id': 'img-1' }],
    pools: [{ name: 'main', 'max-servers': max, networks: ['private'], 'host-key-checking': false, labels: [label('small'), label(`only-${name}`)] }],
  };
}

describe('placement by headroom and the circuit breaker of a failing cloud', () => {
  let a: ScriptedCloud;
  let b: ScriptedCloud;
  let sys: LauncherSystem;
  let client: NodepoolClient;
  /** When A's Nova saw each create (epoch ms), and whether creates fail. */
  const aCreates: number[] = [];
  let aFails = false;

  before(async () => {
    a = await ScriptedCloud.start();
    b = await ScriptedCloud.start();
    playNova(a, {
      createFault: () => {
        aCreates.push(Date.now());
        return aFails ? { status: 500, body: { computeFault: { code: 500, message: 'fault injected by the test' } } } : undefined;
      },
    });
    playNova(b);
    sys = await LauncherSystem.create({
      labels: [{ name: 'small' }, { name: 'only-a' }, { name: 'only-b' }],
      providers: [provider('a', 10), provider('b', 10)],
    });
    const cloudsFile = path.join(sys.dir, 'clouds.yaml');
    const entry = (c: ScriptedCloud): Record<string, unknown> => {
      const k = c.creds();
      return {
        auth: { auth_url: k.authUrl, username: k.username, password: k.password, project_name: k.projectName, user_domain_name: 'Default', project_domain_name: 'Default' },
        region_name: k.regionName, identity_api_version: 3,
      };
    };
    await writeFile(cloudsFile, yaml.dump({ clouds: { a: entry(a), b: entry(b) } }));
    await sys.rewrite((p) => ({
      ...p,
      extra: {
        'clouds-file': cloudsFile,
        launcher: {
          interval: 0.2, 'delete-interval': 0.5, 'cleanup-interval': 1, 'session-ttl': 3,
          breaker: { failures: 2, backoff: BACKOFF_S, 'max-backoff': 60, 'probe-timeout': 30 },
        },
      },
    }));
    await sys.startServer('placer');
    client = await sys.client('placement-test');
  });

  after(async () => {
    await sys?.stop();
    await a?.stop();
    await b?.stop();
  });

  /** Takes `count` nodes of `label`, one request at a time (each placed with the standings of the ones before). */
  async function take(label: string, count: number): Promise<NodeRecord[]> {
    const nodes: NodeRecord[] = [];
    for (let i = 0; i < count; i++) nodes.push(...await client.requestNodes([label], { timeoutMs: 60_000 }));
    return nodes;
  }

  /** Hands nodes back and waits until their servers are deleted. */
  async function giveBack(nodes: readonly NodeRecord[]): Promise<void> {
    for (const n of nodes) await client.release(n.id);
    const ids = new Set(nodes.map((n) => n.id));
    await sys.waitForNodes('the returned nodes deleted', (all) => !all.some((n) => ids.has(n.id)));
  }

  /** A pool's standing as its launcher published it. */
  async function standingOf(provider: string): Promise<NonNullable<Awaited<ReturnType<typeof sys.store.listLaunchers>>[number]['standing']> | undefined> {
    return (await sys.store.listLaunchers()).find((l) => l.provider === provider)?.standing;
  }

  /** request-list's row for request `id`, as the CLI prints it, by column. */
  async function listed(id: string): Promise<Record<string, string>> {
    const view = await requestListView({ store: sys.store, config: () => loadConfig(sys.configPath), clock: Date.now });
    const row = view.rows.find((r) => r[0] === id);
    assert.ok(row, `request ${id} in request-list`);
    return Object.fromEntries(view.columns.map((c, i) => [c, row[i] ?? '']));
  }

  it('sends the next requests to the provider with more headroom: A at 80 %, B at 10 %', async () => {
    const held = [...await take('only-a', 8), ...await take('only-b', 1)];
    await waitFor(async () => (await standingOf('cloud-a'))?.headroom === 0.2 && (await standingOf('cloud-b'))?.headroom === 0.9, {
      timeoutMs: 30_000, what: 'A and B publishing 20 % and 90 % headroom', intervalMs: 100,
    });
    const placed = await take('small', 4);
    assert.deepEqual(placed.map((n) => n.provider), ['cloud-b', 'cloud-b', 'cloud-b', 'cloud-b']);
    await giveBack([...held, ...placed]);
  });

  it('a request for a full provider waits, and request-list names the limit', async () => {
    const held = await take('only-a', 10);
    const waiting = await client.request(['only-a']);
    const row = await waitFor(async () => {
      const r = await listed(waiting.id);
      return /cloud-a\/main: at-quota \(max-servers: 10 of 10 nodes, none free\)/.test(r.Waiting ?? '') ? r : undefined;
    }, { timeoutMs: 30_000, what: 'request-list naming A at max-servers', intervalMs: 200 });
    assert.match(row.State ?? '', /requested|pending/);
    const json = (await requestListView({ store: sys.store, config: () => loadConfig(sys.configPath), clock: Date.now })).json as Array<{ id: string; waitReasons: Array<{ provider: string; reason: string }> }>;
    assert.deepEqual(json.find((r) => r.id === waiting.id)?.waitReasons.map((w) => [w.provider, w.reason]), [['cloud-a', 'at-quota'], ['cloud-b', 'label-not-served']]);
    // A node back makes room: the waiting request is served by A.
    await giveBack(held.slice(0, 1));
    const served = await sys.waitForRequest(waiting.id, ['fulfilled'], 60_000);
    const [node] = await client.accept(served);
    assert.equal(node?.provider, 'cloud-a');
    await giveBack([...held.slice(1), ...(node ? [node] : [])]);
  });

  it('opens A\'s breaker after its launches fail, sends requests to B meanwhile, and closes it on a probe once A works', async () => {
    aFails = true;
    const before = aCreates.length;
    const served: NodeRecord[] = [];
    // Requests that land on A fail there and are served by B; after two failures A's breaker opens.
    const opened = await waitFor(async () => {
      served.push(...await client.requestNodes(['small'], { timeoutMs: 60_000 }));
      const s = await standingOf('cloud-a');
      return s?.breaker.state === 'open' ? s.breaker : undefined;
    }, { timeoutMs: 120_000, what: 'A\'s breaker open', intervalMs: 0 });
    assert.equal(opened.failures, 2);
    assert.equal(aCreates.length - before, 2, 'two failed creates opened it');
    assert.ok(served.every((n) => n.provider === 'cloud-b'), 'every request served, by B');
    // While it holds: `small` goes to B, and A sees no create.
    const during = await take('small', 3);
    assert.deepEqual(during.map((n) => n.provider), ['cloud-b', 'cloud-b', 'cloud-b']);
    const creates = aCreates.filter((t) => t > opened.since && t < opened.until);
    assert.deepEqual(creates, [], 'no create reached A while its breaker held');
    // A request only A serves waits, and says why, until the probe.
    const waiting = await client.request(['only-a']);
    if (Date.now() < opened.until - 1000) {
      const row = await listed(waiting.id);
      assert.match(row.Waiting ?? '', /cloud-a\/main: breaker-open/);
      assert.equal(row.State, 'requested');
      // The console's requests page says the same.
      const page = requestsPage(await readRequests({ store: sys.store, config: () => loadConfig(sys.configPath), clock: Date.now }));
      const block = page.blocks[0];
      assert.ok(block?.kind === 'table');
      const cells = block.rows.find((r) => r[0] === waiting.id);
      const waitingCell = cells?.[block.columns.indexOf('Waiting')];
      assert.match(typeof waitingCell === 'object' && waitingCell !== null ? waitingCell.text ?? '' : String(waitingCell), /cloud-a\/main: breaker-open/);
    }
    aFails = false;
    const done = await sys.waitForRequest(waiting.id, ['fulfilled'], 120_000);
    const [probed] = await client.accept(done);
    assert.equal(probed?.provider, 'cloud-a');
    assert.ok((aCreates.at(-1) ?? 0) >= opened.until, 'the probe came after the backoff');
    await waitFor(async () => (await standingOf('cloud-a'))?.breaker.state === 'closed', { timeoutMs: 30_000, what: 'A\'s breaker closed', intervalMs: 100 });
    await giveBack([...served, ...during, ...(probed ? [probed] : [])]);
  });
});
