import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { classifyEntry, formatImageId, parseImageId, UPLOAD_ID_RE, uploadIdOf } from '../../../lib/images/image-file.js';
import { buildFormats } from '../../../lib/config/build-formats.js';
import { conversionSource, convertArgs } from '../../../lib/images/formats.js';
import { InvalidJobError } from '../../../lib/errors.js';
import { parseConfig } from '../../../lib/config/load.js';
import { fn } from '../../../lib/gearman/functions.js';

describe('image ids', () => {
  it('formats and parses <diskimage>-<10 digits>', () => {
    assert.equal(formatImageId('ubuntu-jammy', 1), 'ubuntu-jammy-0000000001');
    assert.deepEqual(parseImageId('ubuntu-jammy-0000000042'), { id: 'ubuntu-jammy-0000000042', diskimage: 'ubuntu-jammy', build: '0000000042', sequence: 42 });
  });
  it("parses Nodepool 11's <diskimage>-<uuid4 hex>, which has no sequence", () => {
    const hex = '3f2b8c0e9d7a4b1c8e6f5a4d3c2b1a09';
    assert.deepEqual(parseImageId(`ubuntu-jammy-${hex}`), { id: `ubuntu-jammy-${hex}`, diskimage: 'ubuntu-jammy', build: hex, sequence: null });
  });
  it('names uploads under a uuid build <hex>-<provider>-<seq>, ours by their 10 digits', () => {
    const hex = '3f2b8c0e9d7a4b1c8e6f5a4d3c2b1a09';
    assert.equal(uploadIdOf(hex, 'cloud-a', '0000000001'), `${hex}-cloud-a-0000000001`);
    assert.equal(uploadIdOf('0000000007', 'cloud-a', '0000000001'), '0000000001');
    assert.ok(UPLOAD_ID_RE.test(`${hex}-cloud-a-0000000001`) && UPLOAD_ID_RE.test('0000000001'));
    for (const bad of [`${hex}-a/b-0000000001`, `${hex}--0000000001`, `${hex.toUpperCase()}-p-0000000001`, '000000001']) assert.ok(!UPLOAD_ID_RE.test(bad), bad);
  });
  for (const bad of ['../x', 'a/b-0000000001', '..-0000000001', 'x-000000001', '-0000000001', 'x-0000000001/', 'x..y-0000000001', 'x\u0000-0000000001', '',
    'x-3F2B8C0E9D7A4B1C8E6F5A4D3C2B1A09', 'x-3f2b8c0e9d7a4b1c8e6f5a4d3c2b1a0', '../3f2b8c0e9d7a4b1c8e6f5a4d3c2b1a09', 'x-3f2b8c0e-9d7a-4b1c-8e6f-5a4d3c2b1a09']) {
    it(`rejects ${JSON.stringify(bad)}`, () => assert.throws(() => parseImageId(bad), InvalidJobError));
  }
  it('rejects unknown diskimages when told which are known', () => {
    assert.throws(() => parseImageId('centos-0000000001', new Set(['ubuntu'])), /which this builder does not know/);
  });
});

describe('classifyEntry', () => {
  it('tells image files, checksums, sidecars, DIB dirs, partials and strays apart', () => {
    assert.deepEqual(classifyEntry('u-0000000001.qcow2', false), { kind: 'image', id: 'u-0000000001', format: 'qcow2' });
    assert.deepEqual(classifyEntry('u-0000000001.qcow2.sha256', false), { kind: 'checksum', id: 'u-0000000001', format: 'qcow2', algo: 'sha256' });
    assert.deepEqual(classifyEntry('u-0000000001.json', false), { kind: 'sidecar', id: 'u-0000000001' });
    assert.deepEqual(classifyEntry('u-0000000001.d', true), { kind: 'dib-dir', id: 'u-0000000001' });
    assert.deepEqual(classifyEntry('u-0000000001.vhd.converting', false), { kind: 'partial', id: 'u-0000000001', name: 'u-0000000001.vhd.converting' });
    assert.deepEqual(classifyEntry('lost+found', true), { kind: 'other', name: 'lost+found' });
    assert.deepEqual(classifyEntry('builder_id.txt', false), { kind: 'other', name: 'builder_id.txt' });
    assert.deepEqual(classifyEntry('.tmp', true), { kind: 'other', name: '.tmp' });
    // A Nodepool 11 builder's files are never ours to remove as incomplete builds.
    assert.deepEqual(classifyEntry('u-3f2b8c0e9d7a4b1c8e6f5a4d3c2b1a09.qcow2', false), { kind: 'other', name: 'u-3f2b8c0e9d7a4b1c8e6f5a4d3c2b1a09.qcow2' });
  });
});

describe('formats', () => {
  const c = parseConfig([
    'diskimages: [{name: a}, {name: b, formats: [raw]}, {name: c}]',
    'providers:',
    '  - {name: p1, cloud: x, image-format: vhd, diskimages: [{name: a}]}',
    '  - {name: p2, cloud: x, image-format: qcow2, diskimages: [{name: a}, {name: b}]}',
  ].join('\n'), 'n.yaml');
  it('builds what providers need unless formats are given; vhd comes from conversion', () => {
    assert.deepEqual(buildFormats(c, c.diskimages[0]!), ['qcow2']);
    assert.deepEqual(buildFormats(c, c.diskimages[1]!), ['raw']);
    assert.deepEqual(buildFormats(c, c.diskimages[2]!), ['qcow2']);
  });
  it('prefers raw as a conversion source and maps vhd to qemu\'s vpc with an exact size', () => {
    assert.equal(conversionSource(['qcow2', 'raw'], 'vhd'), 'raw');
    assert.equal(conversionSource(['qcow2'], 'raw'), 'qcow2');
    assert.equal(conversionSource(['tar'], 'raw'), undefined);
    assert.equal(conversionSource(['qcow2'], 'tar'), undefined);
    assert.deepEqual(convertArgs('/s.raw', 'raw', '/d.vhd', 'vhd'), ['convert', '-p', '-f', 'raw', '-O', 'vpc', '-o', 'force_size', '/s.raw', '/d.vhd']);
  });
});

describe('Gearman function names', () => {
  it('are built and parsed in one place', () => {
    assert.equal(fn.imageBuild('u'), 'image-build:u');
    assert.deepEqual(fn.parse(fn.imageUpload('u-0000000001')), { kind: 'upload', imageId: 'u-0000000001' });
    assert.deepEqual(fn.parse(fn.imageDelete('u-0000000001')), { kind: 'delete', imageId: 'u-0000000001' });
    assert.equal(fn.parse('build:job'), undefined);
  });
});
