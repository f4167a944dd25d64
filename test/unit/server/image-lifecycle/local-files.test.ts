import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FILES_DELETED, filesDeletedReason, localFormats } from '../../../../server/image-lifecycle/local-files.js';
import { bid, build, config, NOW, planRow, table, upload } from './planner-fixtures.js';

const A1 = bid('a', 1);
const file = (format: string) => ({ format, size: 1000, sha256: format.padEnd(64, '0') });
/** Diskimage a built as qcow2 and raw, freed after upload; p1 takes qcow2, p2 raw. */
const cfg = (keys: Record<string, unknown> = {}, providers?: object[]) => config({
  diskimages: [{ name: 'a', formats: ['qcow2', 'raw'], 'delete-after-upload': true, ...keys }],
  providers: providers ?? [
    { name: 'p1', cloud: 'c', 'image-format': 'qcow2', diskimages: [{ name: 'a' }] },
    { name: 'p2', cloud: 'c', 'image-format': 'raw', diskimages: [{ name: 'a' }] },
  ],
});
const built = (over = {}) => build('a', 1, 'ready', { formats: ['qcow2', 'raw'], files: [file('qcow2'), file('raw')], ...over });
/** The build's builder registers image-delete too (real builders do). */
const gearman = { [`image-delete:${A1}`]: ['h1:B1'] };
const deleteFormats = (formats: string[], kept: string[]) => ({ type: 'delete-formats' as const, buildId: A1, formats, kept });

table('rule 6: local files after upload (delete-after-upload, keep-formats)', [
  {
    name: 'deletes each format once every provider reading it has a ready upload of the build',
    config: cfg(), builds: [built()], uploads: [upload(1, 'a', 1, 'p1'), upload(2, 'a', 1, 'p2', 'ready', { format: 'raw' })], gearman,
    actions: [deleteFormats(['qcow2', 'raw'], [])],
  },
  {
    name: 'deletes only the format whose providers all have it; keeps the one a provider still lacks',
    // p2's upload failed just now: it is retried after the backoff, and its raw file stays.
    config: cfg(), builds: [built()], uploads: [upload(1, 'a', 1, 'p1'), upload(2, 'a', 1, 'p2', 'failed', { format: 'raw', stateTime: NOW })], gearman,
    actions: [deleteFormats(['qcow2'], ['raw'])],
  },
  {
    name: 'deletes nothing of a build an upload is started from in the same pass',
    config: cfg(), builds: [built()], uploads: [upload(1, 'a', 1, 'p1')], gearman,
    actions: [{ type: 'start-upload', buildId: A1, provider: 'p2', imageName: 'a' }],
  },
  {
    name: 'keeps the formats of keep-formats',
    config: cfg({ 'keep-formats': ['raw'] }), builds: [built()], uploads: [upload(1, 'a', 1, 'p1'), upload(2, 'a', 1, 'p2', 'ready', { format: 'raw' })], gearman,
    actions: [deleteFormats(['qcow2'], ['raw'])],
  },
  {
    name: 'deletes nothing without delete-after-upload',
    config: cfg({ 'delete-after-upload': false }), builds: [built()], uploads: [upload(1, 'a', 1, 'p1'), upload(2, 'a', 1, 'p2', 'ready', { format: 'raw' })], gearman,
    actions: [],
  },
  {
    name: 'deletes nothing while an upload of the build runs (a conversion may read the file)',
    config: cfg(), builds: [built()], uploads: [upload(1, 'a', 1, 'p1'), upload(2, 'a', 1, 'p2', 'uploading', { format: 'raw' })],
    inFlight: { uploads: ['0000000002'] }, gearman, actions: [],
  },
  {
    name: 'keeps the file a provider converts from until that provider has the upload',
    config: cfg({ formats: ['raw'] }, [
      { name: 'p1', cloud: 'c', 'image-format': 'raw', diskimages: [{ name: 'a' }] },
      { name: 'p2', cloud: 'c', 'image-format': 'vhd', diskimages: [{ name: 'a' }] },
    ]),
    builds: [build('a', 1, 'ready', { formats: ['raw'], files: [file('raw')] })], uploads: [upload(1, 'a', 1, 'p1', 'ready', { format: 'raw' })],
    // p2 (vhd, converted from raw) has no upload yet: it is started, and raw stays.
    actions: [{ type: 'start-upload', buildId: A1, provider: 'p2', imageName: 'a' }],
  },
  {
    name: 'asks nothing while a delete of the build is in flight',
    config: cfg(), builds: [built()], uploads: [upload(1, 'a', 1, 'p1'), upload(2, 'a', 1, 'p2', 'ready', { format: 'raw' })],
    inFlight: { buildDeletes: [A1] }, gearman, actions: [],
  },
  {
    name: 'asks nothing while no builder registers the build\'s image-delete',
    config: cfg(), builds: [built()], uploads: [upload(1, 'a', 1, 'p1'), upload(2, 'a', 1, 'p2', 'ready', { format: 'raw' })],
    actions: [],
  },
  {
    name: 'asks for nothing more once the files are gone, and the build stays ready (not lost, not rebuilt, not a stray)',
    config: cfg(), builds: [built({ files: [], reason: filesDeletedReason(['qcow2', 'raw'], []) })],
    uploads: [upload(1, 'a', 1, 'p1'), upload(2, 'a', 1, 'p2', 'ready', { format: 'raw' })],
    gearman, actions: [], diskimage: { waiting: null, failures: 0 },
  },
  {
    name: 'does not upload to a new provider from a build whose file was deleted: the target status says why',
    config: cfg({}, [
      { name: 'p1', cloud: 'c', 'image-format': 'qcow2', diskimages: [{ name: 'a' }] },
      { name: 'p2', cloud: 'c', 'image-format': 'raw', diskimages: [{ name: 'a' }] },
    ]),
    builds: [built({ files: [file('raw')], reason: filesDeletedReason(['qcow2'], ['raw']) })],
    uploads: [upload(2, 'a', 1, 'p2', 'ready', { format: 'raw' })], gearman,
    // p1 (qcow2) has no upload of a-1 and raw converts to qcow2: the upload is made from raw.
    actions: [{ type: 'start-upload', buildId: A1, provider: 'p1', imageName: 'a' }],
  },
]);

describe('rule 6: a provider added after the files were deleted', () => {
  it('waits with a reason instead of submitting an upload that cannot work', () => {
    const p = planRow({
      config: cfg({ formats: ['qcow2'] }, [
        { name: 'p0', cloud: 'c', 'image-format': 'qcow2', diskimages: [{ name: 'a' }] },
        { name: 'p1', cloud: 'c', 'image-format': 'qcow2', diskimages: [{ name: 'a' }] },
      ]),
      builds: [build('a', 1, 'ready', { formats: ['qcow2'], files: [], reason: filesDeletedReason(['qcow2'], []) })],
      uploads: [upload(1, 'a', 1, 'p0')],
    });
    assert.deepEqual(p.actions, []);
    const st = p.targets.find((t) => t.provider === 'p1');
    assert.match(st?.waiting ?? '', new RegExp(`^build ${A1} has no local qcow2 file .*deleted after its uploads \\(delete-after-upload; kept: none\\).*nodepool image-build a`));
    assert.equal(p.targets.find((t) => t.provider === 'p0')?.waiting, null);
  });
});

describe('localFormats', () => {
  it('is the files that remain; a build that never reported files has its formats; one whose files were all deleted has none', () => {
    assert.deepEqual(localFormats({ files: [file('raw')], formats: ['qcow2', 'raw'], reason: null }), ['raw']);
    assert.deepEqual(localFormats({ files: [], formats: ['qcow2'], reason: null }), ['qcow2']);
    assert.deepEqual(localFormats({ files: [], formats: ['qcow2'], reason: `${FILES_DELETED} (delete-after-upload): qcow2` }), []);
  });
});
