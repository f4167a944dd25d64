/**
 * Nodepool 11's webapp lists from a real WebServer over a real store (SQLite, and ZooKeeper
 * with a chroot of its own): `/dib-image-list`, `/image-list`, `/image-status`, `/node-list`,
 * `/request-list` and `/label-list` answer Nodepool's JSON rows (its field names, value shapes
 * and order, written as Python's json.dumps) and its PrettyTables, `?fields=` as Nodepool,
 * content negotiation as its webob does (406 where it fails with a 500), its headers, `/ready`
 * as Nodepool's; and our richer lists stay at `/api/<same name>`. Records are written to the
 * store directly, as a launcher and a builder would leave them.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../../lib/config/load.js';
import { nodeLock } from '../../../lib/store/lock-names.js';
import type { BuildRecord, NodeRecord, NodeRequestRecord, UploadRecord } from '../../../lib/store/models.js';
import { WebServer } from '../../../server/web/web-server.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { testLogger } from '../../support/test-log.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';
import { get } from './web-helpers.js';

const AGE_RE = /^\d{2,}:\d{2}:\d{2}:\d{2}$/;
const sec = (ms: number): number => Math.trunc(ms / 1000);
/** Ages masked with a string of the same length, so the table's widths stay. */
const masked = (table: string): string => table.replace(/\b\d{2}:\d{2}:\d{2}:\d{2}\b/g, 'DD:HH:MM:SS');

for (const backend of ['sqlite', 'zookeeper'] as const) {
  describe(`Nodepool 11's web lists (${backend} store)`, () => {
    let zk: ZooKeeperHandle | undefined;
    let sys: LauncherSystem;
    let web: WebServer;
    let started = true;
    let deb1: BuildRecord;
    let deb2: BuildRecord;
    let alpine: BuildRecord;
    let uploads: UploadRecord[];
    let n1: NodeRecord;
    let n2: NodeRecord;
    let requests: NodeRequestRecord[];
    let requested: number;

    before(async () => {
      let extra = {};
      if (backend === 'zookeeper') {
        zk = await startZooKeeper();
        extra = { 'zookeeper-servers': [{ host: zk.host, port: zk.port, chroot: `/web-lists-${randomUUID().slice(0, 8)}` }], 'zookeeper-timeout': 5 };
      }
      sys = await LauncherSystem.create({ labels: [{ name: 'small' }, { name: 'big' }], providers: [], extra });
      const { store } = sys;
      deb1 = await store.createBuild({ diskimage: 'deb', formats: ['raw', 'qcow2'] });
      deb1 = (await store.updateBuild(deb1.id, { state: 'ready', builderHostname: 'builder-a.example.org' }))!;
      deb2 = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
      alpine = await store.createBuild({ diskimage: 'alpine', formats: ['qcow2'] });
      alpine = (await store.updateBuild(alpine.id, { state: 'ready', builderHostname: 'builder-b' }))!;
      await store.setPause('alpine', null, true, 'broken mirror');
      const toB = await store.createUpload({ buildId: deb1.id, provider: 'cloud-b', imageName: 'deb', externalName: 'deb-1700000000' });
      await store.updateUpload(toB.id, { state: 'ready', externalId: 'img-b-1' });
      await store.createUpload({ buildId: deb1.id, provider: 'cloud-a', imageName: 'deb', externalName: null });
      uploads = await store.listUploads();
      requested = (await store.requestBuild('deb')).requested;
      n1 = await store.createNode({
        state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'], externalId: 'srv-1', interfaceIp: '203.0.113.1',
        publicIpv4: '203.0.113.1', privateIpv4: '10.0.0.1', hostname: 'node-1', az: 'nova', username: 'zuul', launcher: 'nl01-PoolWorker.cloud-a-main',
      });
      n2 = await store.createNode({
        state: 'in-use', provider: 'hosts', pool: 'static', labels: ['big', 'small'], interfaceIp: '2001:db8::2', publicIpv6: '2001:db8::2',
        connectionPort: 2222, holdReason: 'debugging', holdJob: 'tenant/project/job', userData: { zuul: 'data' }, driverData: { slot: 0 },
      });
      const session = await store.openSession({ owner: 'web-lists-test', hostname: 'nl01', pid: process.pid, ttlMs: 60_000 });
      assert.ok(await store.tryLock(nodeLock(n2.id), session.id));
      await store.createRequest({ labels: ['small', 'big'], requestor: 'zuul-scheduler', priority: 200 });
      await store.createRequest({ labels: ['small'], requestor: 'NodePool:min-ready', priority: 100, reuse: false });
      requests = await store.listRequests();
      await store.registerLauncher({ id: 'nl01-PoolWorker.cloud-a-main', sessionId: session.id, provider: 'cloud-a', pool: 'main', supportedLabels: ['small', 'big'] });
      await store.registerLauncher({ id: 'nl01-PoolWorker.hosts-static', sessionId: session.id, provider: 'hosts', pool: 'static', supportedLabels: ['big', 'tiny'] });
      const config = loadConfig(sys.configPath);
      web = await WebServer.start({
        host: '127.0.0.1', port: 0, log: testLogger(), started: () => started, loops: () => [],
        status: { store, config: () => config, clock: Date.now },
      });
    });

    after(async () => {
      await web?.stop();
      await sys?.stop();
      await zk?.stop();
    });

    /** GET with Accept: application/json; asserts Nodepool's JSON content type and Python's separators. */
    async function rows(path: string): Promise<Array<Record<string, unknown>>> {
      const r = await get(web.port, path, 'application/json');
      assert.equal(r.status, 200, `${path}: ${r.body}`);
      assert.equal(r.headers.get('content-type'), 'application/json');
      const parsed = JSON.parse(r.body) as Array<Record<string, unknown>>;
      if (parsed.length > 0) assert.match(r.body, /^\[\{"[^"]+": /, 'json.dumps writes ": " and ", "');
      return parsed;
    }

    async function text(path: string): Promise<string> {
      const r = await get(web.port, path);
      assert.equal(r.status, 200, `${path}: ${r.body}`);
      assert.equal(r.headers.get('content-type'), 'text/plain; charset=UTF-8');
      return r.body;
    }

    it('/dib-image-list: <image>-<build> ids, sorted formats, paused images as paused, epoch-second ages', async () => {
      assert.deepEqual(await rows('/dib-image-list'), [
        { id: alpine.id, image: 'alpine', builder: 'builder-b', formats: ['qcow2'], state: 'paused', age: sec(alpine.stateTime), pinned: [], revoked: null },
        { id: deb1.id, image: 'deb', builder: 'builder-a.example.org', formats: ['qcow2', 'raw'], state: 'ready', age: sec(deb1.stateTime), pinned: [], revoked: null },
        { id: deb2.id, image: 'deb', builder: null, formats: ['qcow2'], state: 'building', age: sec(deb2.stateTime), pinned: [], revoked: null },
      ]);
      assert.equal(masked(await text('/dib-image-list')), [
        '+-------------------+--------+-----------------------+-----------+----------+-------------+',
        '| ID                | Image  | Builder               | Formats   | State    | Age         |',
        '+-------------------+--------+-----------------------+-----------+----------+-------------+',
        `| ${alpine.id} | alpine | builder-b             | qcow2     | paused   | DD:HH:MM:SS |`,
        `| ${deb1.id}    | deb    | builder-a.example.org | qcow2,raw | ready    | DD:HH:MM:SS |`,
        `| ${deb2.id}    | deb    |                       | qcow2     | building | DD:HH:MM:SS |`,
        '+-------------------+--------+-----------------------+-----------+----------+-------------+',
      ].join('\n'));
    });

    it('/image-list: the build number as id, then upload id, provider, image and the cloud names', async () => {
      const number = (u: UploadRecord): string => u.buildId.slice('deb-'.length);
      const [a, b] = [uploads.find((u) => u.provider === 'cloud-a')!, uploads.find((u) => u.provider === 'cloud-b')!];
      assert.deepEqual(await rows('/image-list'), [
        { id: number(a), upload_id: a.id, provider: 'cloud-a', image: 'deb', external_name: null, external_id: null, state: 'uploading', age: sec(a.stateTime),
          rollout: null, launches: 0, launch_failures: 0, pinned: false },
        { id: number(b), upload_id: b.id, provider: 'cloud-b', image: 'deb', external_name: 'deb-1700000000', external_id: 'img-b-1', state: 'ready', age: sec((await sys.store.getUpload(b.id))!.stateTime),
          rollout: { state: 'promoted', words: 'promoted' }, launches: 0, launch_failures: 0, pinned: false },
      ]);
      const t = await text('/image-list?fields=provider,upload_id,external_id,state');
      assert.deepEqual(t.split('\n'), [
        '+------------+----------+-------------------+-----------+',
        '| Upload ID  | Provider | Provider Image ID | State     |',
        '+------------+----------+-------------------+-----------+',
        `| ${a.id} | cloud-a  |                   | uploading |`,
        `| ${b.id} | cloud-b  | img-b-1           | ready     |`,
        '+------------+----------+-------------------+-----------+',
      ]);
    });

    it('/image-status: paused as a boolean, the waiting build request pending with its epoch second', async () => {
      assert.deepEqual(await rows('/image-status'), [
        { image: 'alpine', paused: true, build_request: null, build_request_age: null, pins: [], revocations: [] },
        { image: 'deb', paused: false, build_request: 'building', build_request_age: sec(requested), pins: [], revocations: [] },
      ]);
      assert.equal(masked(await text('/image-status')), [
        '+--------+--------+---------------+-------------------+',
        '| Image  | Paused | Build Request | Build Request Age |',
        '+--------+--------+---------------+-------------------+',
        '| alpine | True   |               |                   |',
        '| deb    | False  | building      | DD:HH:MM:SS       |',
        '+--------+--------+---------------+-------------------+',
      ].join('\n'));
    });

    it('/node-list: Nodepool keys, age as DD:HH:MM:SS, locked as a word, ?node_id= keeps one node', async () => {
      const all = await rows('/node-list');
      for (const r of all) assert.match(String(r.age), AGE_RE);
      assert.deepEqual(all.map((r) => ({ ...r, age: 'AGE' })), [{
        id: n1.id, provider: 'cloud-a', label: ['small'], server_id: 'srv-1', public_ipv4: '203.0.113.1', ipv6: null, state: 'ready', age: 'AGE',
        locked: 'unlocked', pool: 'main', hostname: 'node-1', private_ipv4: '10.0.0.1', AZ: 'nova', username: 'zuul', connection_port: 22,
        launcher: 'nl01-PoolWorker.cloud-a-main', allocated_to: null, hold_job: null, comment: null, user_data: null, driver_data: null,
      }, {
        id: n2.id, provider: 'hosts', label: ['big', 'small'], server_id: null, public_ipv4: null, ipv6: '2001:db8::2', state: 'in-use', age: 'AGE',
        locked: 'locked', pool: 'static', hostname: null, private_ipv4: null, AZ: null, username: null, connection_port: 2222, launcher: null,
        allocated_to: null, hold_job: 'tenant/project/job', comment: 'debugging', user_data: { zuul: 'data' }, driver_data: { slot: 0 },
      }]);
      assert.deepEqual((await rows(`/node-list?node_id=${n2.id}`)).map((r) => r.id), [n2.id]);
      assert.deepEqual(JSON.parse((await get(web.port, '/node-list?node_id=9999999999', 'application/json')).body), []);
      // Unknown and differently spelt names are ignored; the kept columns stay in table order.
      assert.deepEqual((await text(`/node-list?node_id=${n2.id}&fields=locked,label,id,Provider,driver_data`)).split('\n'), [
        '+------------+-----------+--------+-------------+',
        '| ID         | Label     | Locked | Driver Data |',
        '+------------+-----------+--------+-------------+',
        `| ${n2.id} | big,small | locked | {'slot': 0} |`,
        '+------------+-----------+--------+-------------+',
      ]);
    });

    it('/request-list: relative_priority, node_types, nodes, declined_by, event_id, by priority then age', async () => {
      const [high, normal] = requests as [NodeRequestRecord, NodeRequestRecord];
      assert.match(high.id, /^100-/);
      assert.deepEqual(await rows('/request-list'), [
        { id: high.id, relative_priority: 0, state: 'requested', requestor: 'NodePool:min-ready', node_types: ['small'], nodes: [], declined_by: [], event_id: high.eventId ?? null },
        { id: normal.id, relative_priority: 0, state: 'requested', requestor: 'zuul-scheduler', node_types: ['small', 'big'], nodes: [], declined_by: [], event_id: normal.eventId ?? null },
      ]);
      const t = await text('/request-list?fields=id,relative_priority,state,requestor,node_types');
      assert.deepEqual(t.split('\n'), [
        '+----------------+----------+-----------+--------------------+------------+',
        '| Request ID     | Priority | State     | Requestor          | Node Types |',
        '+----------------+----------+-----------+--------------------+------------+',
        `| ${high.id} | 0        | requested | NodePool:min-ready | small      |`,
        `| ${normal.id} | 0        | requested | zuul-scheduler     | small,big  |`,
        '+----------------+----------+-----------+--------------------+------------+',
      ]);
    });

    it("/label-list: the union of the registered pools' supported labels", async () => {
      assert.deepEqual((await rows('/label-list')).map((r) => r.label).sort(), ['big', 'small', 'tiny']);
      const lines = (await text('/label-list')).split('\n');
      assert.deepEqual([lines[0], lines[1], lines[2], lines.at(-1)], ['+-------+', '| Label |', '+-------+', '+-------+']);
      assert.deepEqual(lines.slice(3, -1).sort(), ['| big   |', '| small |', '| tiny  |']);
    });

    it('negotiates as Nodepool: text unless JSON is strictly preferred, 406 when nothing matches', async () => {
      const cases: Array<[string | undefined, number, string | null]> = [
        [undefined, 200, 'text/plain; charset=UTF-8'],
        ['*/*', 200, 'text/plain; charset=UTF-8'],
        ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 200, 'text/plain; charset=UTF-8'],
        ['application/json, text/plain', 200, 'text/plain; charset=UTF-8'],
        ['text/plain;q=0.5, application/json', 200, 'application/json'],
        ['application/json', 200, 'application/json'],
        ['image/png', 406, 'text/plain; charset=utf-8'],
        ['application/json;charset=utf-8', 406, 'text/plain; charset=utf-8'],
      ];
      for (const [accept, status, type] of cases) {
        const r = await get(web.port, '/label-list', accept);
        assert.deepEqual([r.status, r.headers.get('content-type')], [status, type], `Accept: ${String(accept)}`);
      }
      const suffix = await get(web.port, '/label-list.json');
      assert.equal(suffix.headers.get('content-type'), 'application/json', 'a .json suffix asks for JSON');
    });

    it("answers Nodepool's headers on the lists", async () => {
      const r = await get(web.port, '/node-list');
      assert.equal(r.headers.get('access-control-allow-origin'), '*');
      assert.equal(r.headers.get('cache-control'), 'public, max-age=1');
      const lastModified = Date.parse(r.headers.get('last-modified') ?? '');
      assert.ok(Math.abs(Date.now() - lastModified) < 5000);
      assert.equal(Date.parse(r.headers.get('expires') ?? '') - lastModified, 1000);
    });

    it('answers /ready as Nodepool: OK once started (whatever the format), 503 before', async () => {
      const ready = await get(web.port, '/ready');
      assert.deepEqual([ready.status, ready.headers.get('content-type'), ready.body], [200, 'text/plain; charset=UTF-8', 'OK']);
      assert.equal(ready.headers.get('cache-control'), 'public, max-age=1');
      const json = await get(web.port, '/ready', 'application/json');
      assert.deepEqual([json.status, json.headers.get('content-type'), json.body], [200, 'application/json', 'OK']);
      started = false;
      try {
        assert.equal((await get(web.port, '/ready')).status, 503);
        assert.equal((await get(web.port, '/health/ready')).status, 503, '/health/ready says the same');
      } finally {
        started = true;
      }
    });

    it('keeps our richer lists at /api/<same name>', async () => {
      const nodes = JSON.parse((await get(web.port, '/api/node-list.json')).body) as Array<{ id: string; labels: string[]; locked: boolean; interfaceIp: string }>;
      assert.deepEqual(nodes.map((n) => [n.id, n.labels, n.locked, n.interfaceIp]), [[n1.id, ['small'], false, '203.0.113.1'], [n2.id, ['big', 'small'], true, '2001:db8::2']]);
      const builds = JSON.parse((await get(web.port, '/api/dib-image-list', 'application/json')).body) as { builds: Array<{ id: string }> };
      assert.deepEqual(builds.builds.map((b) => b.id).sort(), [alpine.id, deb1.id, deb2.id]);
      const status = await get(web.port, '/api/image-status');
      assert.equal(status.headers.get('content-type'), 'text/plain; charset=utf-8');
      assert.match(status.body, /^\| alpine +\| yes \(operator: broken mirror\) +\| no +\| +\|$/m);
      const labels = await get(web.port, '/api/label-list');
      assert.match(labels.body, /^\| Label +\| Min Ready +\| Ready/m);
      assert.equal((await get(web.port, '/api/image-list?fields=id,colour')).status, 400);
      assert.equal((await get(web.port, '/api/nope')).status, 404);
    });
  });
}
