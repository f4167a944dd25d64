/**
 * `nodepool import-image-data FILE`: the command function against real SQLite stores (a
 * source exported with export-image-data, a target in another state dir), and the checks the
 * file goes through before any store is touched.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { exportImageData } from '../../../cli/commands/export-image-data.js';
import { importImageData } from '../../../cli/commands/import-image-data.js';
import { EXIT } from '../../../cli/commands/shared.js';
import { Releasers } from '../../../lib/lifecycle.js';
import { InvalidImageDataError } from '../../../lib/errors.js';
import type { ImageData } from '../../../lib/store/image-data.js';
import { checkImageData, parseImageData } from '../../../lib/store/image-data-check.js';
import type { Store } from '../../../lib/store/store.js';
import { createCliEnv, type CliEnv } from './cli-env.js';

type Json = Record<string, unknown>;

/** Everything image data in a store. */
async function imageRecords(store: Store): Promise<unknown> {
  return { builds: await store.listBuilds(), uploads: await store.listUploads(), pauses: await store.listPauses(), requests: await store.listBuildRequests() };
}

describe('nodepool import-image-data', () => {
  const releasers = new Releasers();
  afterEach(() => releasers.releaseAll());

  async function env(): Promise<CliEnv> {
    const e = await createCliEnv();
    releasers.add('cli env', () => e.close());
    return e;
  }

  /** A source store with records, exported to `<source dir>/export.json`. */
  async function exported(): Promise<{ source: CliEnv; file: string }> {
    const source = await env();
    const b1 = await source.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    await source.store.updateBuild(b1.id, { state: 'ready' });
    const b2 = await source.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    await source.store.createUpload({ buildId: b1.id, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: null });
    await source.store.createUpload({ buildId: b2.id, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: null });
    await source.store.setPause('debian-bookworm', null, true, 'mirror down');
    await source.store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'] });
    const file = path.join(source.dir, 'export.json');
    const r = await exportImageData({ configFile: source.configFile, file });
    assert.equal(r.exitCode, EXIT.ok, r.stderr);
    return { source, file };
  }

  async function rewrite(file: string, change: (data: Json) => void): Promise<void> {
    const data = JSON.parse(await readFile(file, 'utf8')) as Json;
    change(data);
    await writeFile(file, JSON.stringify(data));
  }

  it('imports an export into an empty store and prints what it wrote', async () => {
    const { source, file } = await exported();
    const target = await env();
    const r = await importImageData({ configFile: target.configFile, file });
    assert.equal(r.exitCode, EXIT.ok, r.stderr);
    assert.match(r.stdout, /^Imported 2 build\(s\), 2 upload\(s\), 1 pause\(s\), 0 build request\(s\); raised 2 sequence counter\(s\) from .*export\.json \(exported \d{4}-\d\d-\d\dT/);
    assert.equal(r.stderr, '');
    assert.deepEqual(await imageRecords(target.store), await imageRecords(source.store));
    assert.deepEqual(await target.store.listNodes(), []);
    assert.equal((await target.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] })).id, 'ubuntu-jammy-0000000003');
  });

  it('refuses a second import of the same file, naming the existing build, and changes nothing', async () => {
    const { file } = await exported();
    const target = await env();
    assert.equal((await importImageData({ configFile: target.configFile, file })).exitCode, EXIT.ok);
    const before = await imageRecords(target.store);
    const r = await importImageData({ configFile: target.configFile, file });
    assert.equal(r.exitCode, EXIT.failed);
    assert.equal(r.stderr, 'Import refused, nothing imported: build ubuntu-jammy-0000000001 already exists in the target store; import refuses to overwrite it\n');
    assert.deepEqual(await imageRecords(target.store), before);
  });

  it('tells which pauses it kept because the store had its own', async () => {
    const { file } = await exported();
    const target = await env();
    await target.store.setPause('debian-bookworm', null, true, 'our own');
    const r = await importImageData({ configFile: target.configFile, file });
    assert.equal(r.exitCode, EXIT.ok, r.stderr);
    assert.match(r.stdout, /\nKept 1 pause\(s\) and 0 build request\(s\) the store already had for the same diskimages\n$/);
    assert.equal((await target.store.listPauses())[0]?.reason, 'our own');
  });

  it('refuses a corrupt file with the path of every bad field, before opening the store', async () => {
    const { file } = await exported();
    await rewrite(file, (d) => {
      (d.builds as Json[])[1]!.state = 'exploded';
      delete (d.uploads as Json[])[0]!.provider;
    });
    const target = await env();
    const r = await importImageData({ configFile: target.configFile, file });
    assert.equal(r.exitCode, EXIT.failed);
    assert.equal(r.stderr, `${file}: not valid image data:\n`
      + '  builds[1].state: expected one of building, ready, failed, deleting, lost, got "exploded"\n'
      + '  uploads[0].provider: missing\n'
      + 'Nothing was imported.\n');
    assert.deepEqual(await target.store.listBuilds(), []);
  });

  it('says what is wrong with a file that is missing, too large, not JSON or of another kind', async () => {
    const { source, file } = await exported();
    const target = await env();
    const run = (f: string, maxBytes?: number) => importImageData({ configFile: target.configFile, file: f, maxBytes });
    const missing = await run(path.join(source.dir, 'nope.json'));
    assert.equal(missing.exitCode, EXIT.usage);
    assert.match(missing.stderr, /^Cannot read .*nope\.json: ENOENT/);
    const large = await run(file, 100);
    assert.equal(large.exitCode, EXIT.failed);
    assert.equal(large.stderr, `${file} is larger than 100 bytes, more than an image data file may be; nothing was imported\n`);
    const notJson = path.join(source.dir, 'not.json');
    await writeFile(notJson, '{"format": ');
    const bad = await run(notJson);
    assert.equal(bad.exitCode, EXIT.failed);
    assert.match(bad.stderr, /not\.json is not image data: not JSON \(/);
    await writeFile(notJson, '{"format": "nodepool-ts-image-data", "version": 7}');
    const newer = await run(notJson);
    assert.match(newer.stderr, /version: version 7 is newer than this nodepool reads \(1\); upgrade nodepool/);
    await writeFile(notJson, '[1, 2]');
    assert.match((await run(notJson)).stderr, /not valid image data:\n {2}expected an object, got an array/);
    assert.deepEqual(await target.store.listBuilds(), []);
  });

  it('warns when a server is running against the target store', async () => {
    const { file } = await exported();
    const target = await env();
    await target.heartbeat();
    const r = await importImageData({ configFile: target.configFile, file });
    assert.equal(r.exitCode, EXIT.ok, r.stderr);
    assert.match(r.stderr, /^warning: a nodepool-server is running against this store/);
  });
});

describe('image data validation', () => {
  /** A valid document to break one field at a time. */
  const valid = (): Json => ({
    format: 'nodepool-ts-image-data', version: 1, exported: 1_700_000_000_000,
    builds: [
      { id: 'debian-0000000002', diskimage: 'debian', state: 'ready', stateTime: 1, created: 1, builderHostname: 'b', builderId: null,
        formats: ['qcow2'], files: [{ format: 'qcow2', size: 1, sha256: 'x' }], reason: null, progress: null },
    ],
    uploads: [
      { id: '0000000003', buildId: 'debian-0000000002', diskimage: 'debian', provider: 'cloud-a', imageName: 'debian', state: 'uploading',
        stateTime: 1, created: 1, externalId: null, externalName: null, format: null, reason: null,
        progress: { numerator: 1, denominator: 2, rate: null, sampledAt: 5 } },
    ],
    pauses: [{ diskimage: 'debian', provider: null, since: 1, reason: null }],
    buildRequests: [{ diskimage: 'debian', requested: 1 }],
    sequences: { build: { debian: 2 }, upload: 3 },
  });
  const broken = (change: (d: Json & { builds: Json[]; uploads: Json[]; pauses: Json[]; buildRequests: Json[]; sequences: Json }) => void): string[] => {
    const d = valid() as Parameters<typeof change>[0];
    change(d);
    return checkImageData(d).map((p) => `${p.path}: ${p.message}`);
  };

  it('accepts a valid document', () => {
    assert.deepEqual(checkImageData(valid()), []);
    assert.deepEqual(checkImageData(JSON.parse(JSON.stringify(valid())) as ImageData), []);
  });

  it('names the path, the expectation and what it got for each bad field', () => {
    assert.deepEqual(broken((d) => { d.format = 'other'; }), ['format: expected "nodepool-ts-image-data", got "other" (not a nodepool image data file)']);
    assert.deepEqual(broken((d) => { d.version = 0; }), ['version: expected 1, got 0']);
    assert.deepEqual(broken((d) => { d.exported = -1; d.extra = 1; }), ['extra: unexpected field', 'exported: expected a time (epoch milliseconds), got -1']);
    assert.deepEqual(broken((d) => { d.builds[0]!.files = [{ format: '', size: 1.5, sha256: 'x' }]; }), [
      'builds[0].files[0].format: expected a format, got ""',
      'builds[0].files[0].size: expected an integer >= 0, got 1.5',
    ]);
    assert.deepEqual(broken((d) => { d.builds[0]!.id = 'ubuntu-0000000002'; }), ['builds[0].id: build ubuntu-0000000002 is not a build of diskimage debian', 'uploads[0].buildId: build debian-0000000002 is not in builds']);
    assert.deepEqual(broken((d) => { d.builds[0]!.id = '../x'; }), ['builds[0].id: expected <diskimage>-<10 digits or 32 hex>, got "../x"', 'uploads[0].buildId: build debian-0000000002 is not in builds']);
    assert.deepEqual(broken((d) => { d.builds.push({ ...d.builds[0] }); }), ['builds[1].id: build debian-0000000002 appears twice (also builds[0])']);
    assert.deepEqual(broken((d) => { d.sequences.build = { debian: 1 }; }), ['builds[0].id: build debian-0000000002 is past sequences.build["debian"] (1)']);
    assert.deepEqual(broken((d) => { d.sequences.upload = 2; }), ['uploads[0].id: upload 0000000003 is past sequences.upload (2)']);
    assert.deepEqual(broken((d) => { d.sequences.build = { 'a/b': 1.5 }; }), [
      'sequences.build: "a/b" is not a diskimage name',
      'sequences.build["a/b"]: expected an integer from 0 to 9999999999, got 1.5',
    ]);
    assert.deepEqual(broken((d) => { d.uploads[0]!.diskimage = 'ubuntu'; }), ['uploads[0].diskimage: ubuntu is not the diskimage of build debian-0000000002']);
    assert.deepEqual(broken((d) => { d.uploads[0]!.progress = { numerator: '1', denominator: 2, eta: 3 }; }), [
      'uploads[0].progress.numerator: expected a number, got "1"',
      'uploads[0].progress.eta: unexpected field',
    ]);
    assert.deepEqual(broken((d) => { d.uploads[0]!.id = 42; }), ['uploads[0].id: expected 10 digits or <build hex>-<provider>-<10 digits>, got 42']);
    assert.deepEqual(broken((d) => { d.pauses.push({ diskimage: 'debian', provider: null, since: 2, reason: 'again' }); d.pauses[0]!.provider = ''; }), [
      'pauses[0].provider: expected a provider name or null, got ""',
    ]);
    assert.deepEqual(broken((d) => { d.pauses.push({ ...d.pauses[0] }); }), ['pauses[1]: a second pause of "debian"']);
    assert.deepEqual(broken((d) => { d.buildRequests.push({ diskimage: 'debian', requested: 'soon' }); }), [
      'buildRequests[1].requested: expected a time (epoch milliseconds), got "soon"',
      'buildRequests[1]: a second build request for "debian"',
    ]);
    assert.deepEqual(broken((d) => { d.uploads = {} as never; }), ['uploads: expected an array, got an object']);
  });

  it('caps a long list of problems in the message but keeps them all', () => {
    const d = valid() as Json & { builds: Json[] };
    d.builds = Array.from({ length: 30 }, () => ({ ...d.builds[0], state: 'bad' }));
    assert.throws(() => parseImageData(d), (err) => {
      assert.ok(err instanceof InvalidImageDataError);
      assert.ok(err.problems.length > 30);
      assert.match(err.message, /… and \d+ more problem\(s\)$/);
      assert.equal(err.message.split('\n').length, 22);
      return true;
    });
  });
});
