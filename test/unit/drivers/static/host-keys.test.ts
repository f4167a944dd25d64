import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hostKeyMismatch, normalizeHostKey, parseKeyscanOutput } from '../../../../lib/ssh/host-keys.js';

const ED = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIALxfbX9TwoknOH3jri1F6wjGMKQSpsD6S1WXU/kTBfV';
const EC = 'ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBL2zmxqKp9ukyVVxHqT69o3ph5p5z2YZhUzQT/1w5iNOhHkmC5jEaIIwkRMa6pXcAM5G6HEvINKUD8NpXYhb7+U=';

describe('ssh host keys', () => {
  it('normalises a public key line and rejects text that is not one', () => {
    assert.equal(normalizeHostKey(`  ${ED}  root@host `), ED);
    assert.equal(normalizeHostKey('ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIALxfbX9TwoknOH3jri1F6wjGMKQSpsD6S1WXU/kTBfV'), undefined, 'type must match the blob');
    assert.equal(normalizeHostKey('not a key'), undefined);
    assert.equal(normalizeHostKey('ssh-ed25519'), undefined);
  });

  it('reads ssh-keyscan output, skipping banners, sorted and deduplicated', () => {
    const out = [`# 127.0.0.2:2222 SSH-2.0-OpenSSH_9.2p1`, `[127.0.0.2]:2222 ${ED}`, `[127.0.0.2]:2222 ${EC}`, `[127.0.0.2]:2222 ${ED}`, ''].join('\n');
    assert.deepEqual(parseKeyscanOutput(out), [EC, ED]);
    assert.deepEqual(parseKeyscanOutput(''), []);
  });

  it('explains a mismatch by key type and accepts a subset', () => {
    assert.equal(hostKeyMismatch([ED], [EC, ED]), undefined);
    assert.equal(hostKeyMismatch([], []), undefined);
    assert.equal(hostKeyMismatch([ED], [EC]), 'host key mismatch: expected ssh-ed25519, scanned ecdsa-sha2-nistp256');
    assert.equal(hostKeyMismatch([ED], []), 'host key mismatch: expected ssh-ed25519, scanned none');
  });
});
