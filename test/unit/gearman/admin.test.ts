import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseStatus, parseWorkers } from '../../../lib/gearman/admin.js';

void describe('admin reply parsing', () => {
  void it('parses status lines, counts last', () => {
    assert.deepEqual(parseStatus(['image-build:debian\t3\t1\t2', 'odd\tname\t0\t0\t1', '']), [
      { name: 'image-build:debian', queued: 3, running: 1, workers: 2 },
      { name: 'odd\tname', queued: 0, running: 0, workers: 1 },
    ]);
  });

  void it('parses workers lines with "-", colon and space client ids, and no functions', () => {
    assert.deepEqual(parseWorkers([
      '21 127.0.0.1 - :',
      '20 127.0.0.1 host:b 1 : other fq',
      '33 ::1 builder-a:0001 : image-upload:x-0000000001 image-delete:x-0000000001',
      'garbage',
    ]), [
      { fd: 21, ip: '127.0.0.1', clientId: '-', functions: [] },
      { fd: 20, ip: '127.0.0.1', clientId: 'host:b 1', functions: ['other', 'fq'] },
      { fd: 33, ip: '::1', clientId: 'builder-a:0001', functions: ['image-upload:x-0000000001', 'image-delete:x-0000000001'] },
    ]);
  });
});
