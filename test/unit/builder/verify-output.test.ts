import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checksumOf, qemuVerdict } from '../../../workers/builder/verify-output.js';

const check = (o: Record<string, number>): string => JSON.stringify({ 'check-errors': 0, filename: 'x.qcow2', format: 'qcow2', ...o }, null, 4);

describe('build output verdicts', () => {
  it('reads the sha256 of a sha256sum line, and nothing from other text', () => {
    assert.equal(checksumOf(`${'AB'.repeat(32)}  /images/x.qcow2\n`), 'ab'.repeat(32));
    assert.equal(checksumOf('d41d8cd98f00b204e9800998ecf8427e  x.qcow2'), undefined, 'an md5 is not a sha256');
    assert.equal(checksumOf(''), undefined);
  });

  it('accepts a clean qcow2 and one with only leaked clusters', () => {
    assert.equal(qemuVerdict('qcow2', 0, check({ 'image-end-offset': 262144 }), 262144), undefined);
    assert.equal(qemuVerdict('qcow2', 3, check({ 'image-end-offset': 1000, leaks: 2 }), 4096), undefined);
  });

  it('refuses a qcow2 cut short even when check finds no error, and one with corruptions', () => {
    assert.equal(qemuVerdict('qcow2', 0, check({ 'image-end-offset': 262144 }), 196608), 'its data ends at byte 262144 but the file has 196608');
    // A real DIB image: the last cluster is short, which qemu-img leaves and reads as zeros.
    assert.equal(qemuVerdict('qcow2', 0, check({ 'image-end-offset': 312999936 }), 312975360), undefined);
    assert.equal(qemuVerdict('qcow2', 0, check({ 'image-end-offset': 4_194_304 }), 3_145_728, 2_097_152), undefined, 'a 2 MiB cluster image');
    const out = `ERROR: counting reference for region exceeding the end of the file\n${check({ 'image-end-offset': 720896, corruptions: 10 })}`;
    assert.equal(qemuVerdict('qcow2', 2, out, 700000),
      '10 corruptions, qemu-img check exited 2 (ERROR: counting reference for region exceeding the end of the file)');
    assert.equal(qemuVerdict('qcow2', 1, "qemu-img: Could not open 'x': Image is not in qcow2 format", 10),
      "qemu-img check exited 1 (qemu-img: Could not open 'x': Image is not in qcow2 format)");
  });

  it('needs info to open raw and vhd files with a virtual size', () => {
    assert.equal(qemuVerdict('raw', 0, '{"virtual-size": 8388608, "format": "raw"}', 8388608), undefined);
    assert.equal(qemuVerdict('vhd', 0, '{"virtual-size": 0, "format": "vpc"}', 512), 'qemu-img info reports no virtual size');
    assert.equal(qemuVerdict('vhd', 1, 'qemu-img: Could not open x', 512), 'qemu-img info failed (exit 1): qemu-img: Could not open x');
  });
});
