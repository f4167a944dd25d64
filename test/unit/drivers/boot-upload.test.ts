import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bootUpload, uploadsByAge, type BootChoice } from '../../../lib/drivers/boot-upload.js';
import type { UploadRecord } from '../../../lib/store/models.js';

const upload = (id: string, over: Partial<UploadRecord> = {}): UploadRecord => ({
  id, buildId: 'deb-0000000001', diskimage: 'deb', provider: 'vms', imageName: 'deb', state: 'ready',
  stateTime: 0, created: 0, externalId: `img-${id}`, externalName: 'deb-1', format: 'qcow2', reason: null, progress: null, ...over,
});

const HEX_A = 'aa2657399a21406d90f7885e5dd3bbad';
const HEX_B = '132bf8e868c24d46b039030c071ea3ed';
const vms: BootChoice = { provider: 'vms', diskimage: 'deb' };

/** [what, the uploads the store lists, the choice, the id booted (undefined: none)]. */
const TABLE: Array<[string, UploadRecord[], BootChoice, string | undefined]> = [
  ['nothing uploaded', [], vms, undefined],
  ['the only ready upload', [upload('0000000001')], vms, '0000000001'],
  ['the newest by sequence, whatever the clocks said', [upload('0000000002', { created: 5 }), upload('0000000009', { created: 1 })], vms, '0000000009'],
  ['never one still uploading or validating', [upload('0000000001'), upload('0000000002', { state: 'uploading' }), upload('0000000003', { state: 'validating' })], vms, '0000000001'],
  ['never a failed or deleting one', [upload('0000000001'), upload('0000000004', { state: 'failed' }), upload('0000000005', { state: 'deleting' })], vms, '0000000001'],
  ['never one without its image in the provider', [upload('0000000001'), upload('0000000002', { externalId: null }), upload('0000000003', { externalId: '' })], vms, '0000000001'],
  ['only this provider\'s', [upload('0000000001'), upload('0000000002', { provider: 'cloud' })], vms, '0000000001'],
  ['only this diskimage\'s', [upload('0000000001'), upload('0000000002', { diskimage: 'fed' })], vms, '0000000001'],
  ['Nodepool 11 uploads by creation time, not by their random hex',
    [upload(`${HEX_B}-vms-0000000001`, { created: 3000 }), upload(`${HEX_A}-vms-0000000001`, { created: 2000 })], vms, `${HEX_B}-vms-0000000001`],
  ['an upload of ours beside adopted ones: by creation time',
    [upload(`${HEX_A}-vms-0000000001`, { created: 2000 }), upload('0000000001', { created: 9000 })], vms, '0000000001'],
  ['equal times: the id decides, so every launcher answers the same',
    [upload(`${HEX_A}-vms-0000000001`, { created: 1 }), upload(`${HEX_B}-vms-0000000001`, { created: 1 })], vms, `${HEX_A}-vms-0000000001`],
  ['the newest the driver can use (its file is gone from the newest)',
    [upload('0000000001'), upload('0000000002')], { ...vms, usable: (u) => u.id !== '0000000002' }, '0000000001'],
  ['none the driver can use', [upload('0000000001')], { ...vms, usable: () => false }, undefined],
];

describe('bootUpload: the upload a label boots', () => {
  for (const [what, uploads, choice, want] of TABLE) {
    it(what, () => {
      assert.equal(bootUpload(uploads, choice)?.id, want);
      assert.equal(bootUpload([...uploads].reverse(), choice)?.id, want, 'the store\'s listing order does not matter');
    });
  }

  it('ranks oldest first without touching its input', () => {
    const list = [upload('0000000003'), upload('0000000001'), upload('0000000002')];
    assert.deepEqual(uploadsByAge(list).map((u) => u.id), ['0000000001', '0000000002', '0000000003']);
    assert.deepEqual(list.map((u) => u.id), ['0000000003', '0000000001', '0000000002']);
  });
});
