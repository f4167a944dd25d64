/**
 * Image rollout (issue 24) as the lists and metrics show it, from a real SQLite store whose
 * pins, revocation, rollout decision and launch counts are written through the Store API (as
 * the actions and launchers leave them): the `nodepool dib-image-list`, `image-list` and
 * `image-status` commands (table and `--json`), the same lists on a real WebServer (ours at
 * `/api/`, Nodepool 11's rows, the dashboard's document) and Prometheus `/metrics`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { UploadRecord } from '../../../lib/store/models.js';
import { PrometheusMetrics } from '../../../server/metrics/prometheus-metrics.js';
import { WebServer } from '../../../server/web/web-server.js';
import { runningProcesses } from '../../support/processes.js';
import { testLogger } from '../../support/test-log.js';
import { createCliEnv, type CliEnv } from '../cli/cli-env.js';
import { get, sample } from './web-helpers.js';

/** cloud-a's ubuntu-jammy rolls out as a 10% canary promoted after 20 launches and an hour; cloud-b's has no rollout. */
const CONFIG = (stateDir: string): string => `
state-dir: ${stateDir}
gearman-servers: [{host: 127.0.0.1}]
labels: [{name: small}]
diskimages:
  - name: ubuntu-jammy
providers:
  - name: cloud-a
    cloud: cloud-a
    diskimages: [{name: ubuntu-jammy, rollout: {canary: 10, promote-after: {launches: 20, age: 3600}}}]
    pools: [{name: main, labels: [{name: small, diskimage: ubuntu-jammy, min-ram: 1024}]}]
  - name: cloud-b
    cloud: cloud-b
    diskimages: [{name: ubuntu-jammy}]
`;

/** The cells of a table's rows (between the rules), trimmed. */
function cells(stdout: string): string[][] {
  return stdout.split('\n').filter((l) => l.startsWith('|')).map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
}

describe('pins, revocations and rollout in the lists, the web and the metrics (SQLite)', () => {
  let env: CliEnv;
  let web: WebServer;
  const b: string[] = [];
  const u: Record<'promoted' | 'canary' | 'revoked' | 'plain', UploadRecord> = {} as never;

  before(async () => {
    env = await createCliEnv(CONFIG);
    const { store } = env;
    for (let i = 0; i < 3; i++) {
      const build = await store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
      await store.updateBuild(build.id, { state: 'ready', builderHostname: 'builder1' });
      b.push(build.id);
    }
    const ready = async (buildId: string, provider: string): Promise<UploadRecord> => {
      const up = await store.createUpload({ buildId, provider, imageName: 'ubuntu-jammy', externalName: `ubuntu-jammy-${buildId}` });
      return (await store.updateUpload(up.id, { state: 'ready', externalId: `img-${up.id}` }))!;
    };
    u.promoted = (await store.updateUpload((await ready(b[0]!, 'cloud-a')).id, {
      launches: 25, rollout: { state: 'promoted', time: Date.now() - 60_000, reason: 'after 25 launches' },
    }))!;
    u.canary = await ready(b[1]!, 'cloud-a');
    for (let i = 0; i < 7; i++) await store.recordLaunch(u.canary.id, 'success');
    await store.recordLaunch(u.canary.id, 'failure');
    u.revoked = await ready(b[2]!, 'cloud-a');
    u.plain = await ready(b[1]!, 'cloud-b');
    await store.setPin('ubuntu-jammy', null, b[0]!, 'known good');
    await store.setPin('ubuntu-jammy', 'cloud-b', b[1]!);
    await store.setRevocation('ubuntu-jammy', b[2]!, true, 'kernel panics');
    const metrics = new PrometheusMetrics({ store, config: () => env.config, loops: () => [], reuseMs: 0 });
    web = await WebServer.start({
      host: '127.0.0.1', port: 0, log: testLogger(), started: () => true, loops: () => [], metrics,
      status: { store, config: () => env.config, clock: Date.now },
    });
  });

  after(async () => {
    await web?.stop();
    await env?.close();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('nodepool dib-image-list: Pinned and Revoked columns at the end; --json pinned and revoked per build', async () => {
    const r = await env.run('dib-image-list');
    assert.equal(r.code, 0, r.stderr);
    const [head, ...rows] = cells(r.stdout);
    assert.deepEqual(head, ['ID', 'Image', 'Builder', 'Formats', 'State', 'Age', 'Pinned', 'Revoked']);
    assert.deepEqual(rows.map((c) => [c[0], c[4], c[6], c[7]]), [
      [b[0], 'ready', 'all', ''], [b[1], 'ready', 'cloud-b', ''], [b[2], 'ready', '', 'revoked: kernel panics'],
    ]);
    const json = await env.run('dib-image-list', '--json');
    const doc = JSON.parse(json.stdout) as { builds: Array<{ id: string; state: string; pinned: string[]; revoked: { since: number; reason: string } | null }> };
    assert.deepEqual(doc.builds.map((x) => [x.id, x.state, x.pinned, x.revoked?.reason ?? null]), [
      [b[0], 'ready', ['all'], null], [b[1], 'ready', ['cloud-b'], null], [b[2], 'ready', [], 'kernel panics'],
    ]);
    assert.ok(Math.abs(doc.builds[2]!.revoked!.since - Date.now()) < 60_000, 'revoked since a moment ago');
  });

  it("nodepool image-list: each upload's rollout in words with its launches and failures; --json rollout, launches, launchFailures", async () => {
    const r = await env.run('image-list');
    assert.equal(r.code, 0, r.stderr);
    const [head, ...rows] = cells(r.stdout);
    assert.deepEqual(head?.slice(-3), ['Rollout', 'Launches', 'Launch Failures']);
    assert.deepEqual(rows.map((c) => [c[1], c[2], ...c.slice(-3)]), [
      [u.promoted.id, 'cloud-a', 'pinned; promoted', '25', '0'],
      [u.canary.id, 'cloud-a', 'canary 10% 7/20 launches', '7', '1'],
      [u.revoked.id, 'cloud-a', 'revoked: kernel panics', '0', '0'],
      [u.plain.id, 'cloud-b', 'pinned; promoted', '0', '0'],
    ]);
    const json = await env.run('image-list', '--json');
    const doc = JSON.parse(json.stdout) as { uploads: Array<{ id: string; rollout: { state: string; words: string; derived: boolean }; launches: number; launchFailures: number }> };
    const canary = doc.uploads.find((x) => x.id === u.canary.id);
    assert.deepEqual(canary && [canary.rollout, canary.launches, canary.launchFailures],
      [{ state: 'canary', words: 'canary 10% 7/20 launches', since: u.canary.stateTime, reason: null, derived: true, pinned: false }, 7, 1]);
    const promoted = doc.uploads.find((x) => x.id === u.promoted.id);
    assert.deepEqual(promoted && [promoted.rollout.state, promoted.rollout.derived], ['promoted', false], 'the written decision');
    assert.deepEqual(doc.uploads.map((x) => [x.id, (x.rollout as { pinned?: boolean } | null)?.pinned]),
      [[u.promoted.id, true], [u.canary.id, false], [u.revoked.id, false], [u.plain.id, true]], 'the upload each provider\'s pin boots says pinned');
  });

  it('nodepool image-status: the pins and the revoked build as columns and lines; --json pins and revocations', async () => {
    const r = await env.run('image-status');
    assert.equal(r.code, 0, r.stderr);
    const [head, row] = cells(r.stdout);
    assert.deepEqual(head, ['Image', 'Paused', 'Build Request', 'Build Request Age', 'Pinned', 'Revoked']);
    assert.deepEqual(row?.slice(4), [`all: ${b[0]}, cloud-b: ${b[1]}`, b[2]]);
    assert.match(r.stdout, new RegExp(`ubuntu-jammy: build ${b[0]} pinned on all providers since \\S+Z \\(known good\\)\n`));
    assert.match(r.stdout, new RegExp(`ubuntu-jammy: build ${b[1]} pinned on cloud-b since \\S+Z\n`));
    assert.match(r.stdout, new RegExp(`ubuntu-jammy: build ${b[2]} revoked since \\S+Z \\(kernel panics\\)\n`));
    const json = await env.run('image-status', '--json');
    const [status] = JSON.parse(json.stdout) as Array<{ pins: Array<{ provider: string; buildId: string; reason: string | null }>; revocations: Array<{ buildId: string }> }>;
    assert.deepEqual(status?.pins.map((p) => [p.provider, p.buildId, p.reason]), [['all', b[0], 'known good'], ['cloud-b', b[1], null]]);
    assert.deepEqual(status?.revocations.map((x) => x.buildId), [b[2]]);
  });

  it('the web: /api/ lists as the CLI prints them, Nodepool 11 rows with the added fields, the dashboard document', async () => {
    const api = JSON.parse((await get(web.port, '/api/image-list.json')).body) as { uploads: Array<{ id: string; rollout: { words: string } | null }> };
    assert.equal(api.uploads.find((x) => x.id === u.canary.id)?.rollout?.words, 'canary 10% 7/20 launches');
    const cli = await env.run('image-list');
    assert.equal((await get(web.port, '/api/image-list')).body.replace(/\d\d:\d\d:\d\d:\d\d/g, 'AGE'), cli.stdout.replace(/\d\d:\d\d:\d\d:\d\d/g, 'AGE'));

    const dib = JSON.parse((await get(web.port, '/dib-image-list', 'application/json')).body) as Array<Record<string, unknown>>;
    assert.deepEqual(dib.map((x) => Object.keys(x)), dib.map(() => ['id', 'image', 'builder', 'formats', 'state', 'age', 'pinned', 'revoked']));
    assert.deepEqual(dib.map((x) => [x.id, x.pinned, (x.revoked as { reason: string } | null)?.reason ?? null]), [
      [b[0], ['all'], null], [b[1], ['cloud-b'], null], [b[2], [], 'kernel panics'],
    ]);
    const images = JSON.parse((await get(web.port, '/image-list', 'application/json')).body) as Array<Record<string, unknown>>;
    const row = images.find((x) => x.upload_id === u.canary.id);
    assert.deepEqual(row && [row.state, row.rollout, row.launches, row.launch_failures], ['ready', { state: 'canary', words: 'canary 10% 7/20 launches' }, 7, 1]);
    assert.match((await get(web.port, '/image-list?fields=upload_id,rollout')).body, new RegExp(`\\| ${u.revoked.id} \\| revoked: kernel panics +\\|`));
    const status = JSON.parse((await get(web.port, '/image-status', 'application/json')).body) as Array<{ pins: Array<{ provider: string; build: string }> }>;
    assert.deepEqual(status[0]?.pins.map((p) => [p.provider, p.build]), [['all', b[0]], ['cloud-b', b[1]]]);

    const dash = JSON.parse((await get(web.port, '/dashboard.json')).body) as {
      builds: Array<{ id: string; pinned: string; revoked: string }>; uploads: Array<{ id: string; rollout: string | null; launches: number }>; rolloutLines: string[];
    };
    assert.deepEqual(dash.builds.map((x) => [x.id, x.pinned, x.revoked]), [[b[0], 'all', ''], [b[1], 'cloud-b', ''], [b[2], '', 'revoked: kernel panics']]);
    assert.deepEqual(dash.uploads.filter((x) => x.id === u.canary.id).map((x) => [x.rollout, x.launches]), [['canary 10% 7/20 launches', 7]]);
    assert.equal(dash.rolloutLines.length, 3);
    assert.match((await get(web.port, '/')).body, /id="rollout"/);
  });

  it('/metrics: pins, rollout states and the stored launch counts (a counter), the same after a restart of the metrics', async () => {
    const text = (await get(web.port, '/metrics')).body;
    assert.equal(sample(text, 'nodepool_image_pinned', { diskimage: 'ubuntu-jammy', provider: 'all', build: b[0]! }), 1);
    assert.equal(sample(text, 'nodepool_image_pinned', { diskimage: 'ubuntu-jammy', provider: 'cloud-b', build: b[1]! }), 1);
    const rollout = (up: UploadRecord, state: string): number | undefined =>
      sample(text, 'nodepool_upload_rollout', { diskimage: 'ubuntu-jammy', provider: up.provider, upload: up.id, state });
    assert.deepEqual(['canary', 'promoted', 'revoked'].map((s) => rollout(u.canary, s)), [1, 0, 0]);
    assert.deepEqual(['canary', 'promoted', 'revoked'].map((s) => rollout(u.revoked, s)), [0, 0, 1]);
    assert.deepEqual(['canary', 'promoted', 'revoked'].map((s) => rollout(u.plain, s)), [0, 1, 0]);
    assert.match(text, /^# TYPE nodepool_upload_launches_total counter$/m);
    const launches = (t: string, up: UploadRecord, result: string): number | undefined => sample(t, 'nodepool_upload_launches_total', { upload: up.id, result });
    assert.deepEqual([launches(text, u.canary, 'success'), launches(text, u.canary, 'failure'), launches(text, u.promoted, 'success')], [7, 1, 25]);

    // Another launcher counts a launch in the store: the next scrape, and a fresh metrics object (a restarted server), show the stored total.
    await env.store.recordLaunch(u.canary.id, 'success');
    assert.equal(launches((await get(web.port, '/metrics')).body, u.canary, 'success'), 8);
    const restarted = new PrometheusMetrics({ store: env.store, config: () => env.config, loops: () => [], reuseMs: 0 });
    assert.equal(launches(await restarted.render(), u.canary, 'success'), 8);
    await env.store.setPin('ubuntu-jammy', 'cloud-b', null);
    const unpinned = await restarted.render();
    assert.equal(sample(unpinned, 'nodepool_image_pinned', { diskimage: 'ubuntu-jammy', provider: 'cloud-b', build: b[1]! }), undefined, 'unpinned: the series goes');
  });
});
