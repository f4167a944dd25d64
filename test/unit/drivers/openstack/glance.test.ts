import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { imageApiBase, toGlanceImage } from '../../../../lib/drivers/openstack/glance.js';

describe('Glance endpoint and image parsing', () => {
  it('strips a version suffix from the catalog URL', () => {
    assert.equal(imageApiBase('http://g:9292'), 'http://g:9292');
    assert.equal(imageApiBase('http://g:9292/'), 'http://g:9292');
    assert.equal(imageApiBase('http://g:9292/v2'), 'http://g:9292');
    assert.equal(imageApiBase('https://cloud.example.com/image/v2.0/'), 'https://cloud.example.com/image');
  });

  it('splits string properties from Glance core fields', () => {
    const img = toGlanceImage({
      id: 'i1', name: 'debian-0000000001', status: 'active', visibility: 'private', size: 196616, virtual_size: 67108864,
      checksum: '41ce4d32ce22529a293044bc1eb4e734', os_hash_algo: 'sha512', os_hash_value: 'ab', disk_format: 'qcow2',
      container_format: 'bare', owner: 'p1', protected: false, tags: [], created_at: '2026-01-01T00:00:00Z', self: '/v2/images/i1',
      file: '/v2/images/i1/file', schema: '/v2/schemas/image', stores: 'fs', os_hidden: false, min_ram: 0,
      os_glance_importing_to_stores: '', nodepool_build_id: '0000000001', nodepool_upload_id: '0000000002', purpose: 'ci',
    });
    assert.deepEqual(img, {
      id: 'i1', name: 'debian-0000000001', status: 'active', size: 196616, checksum: '41ce4d32ce22529a293044bc1eb4e734',
      diskFormat: 'qcow2', containerFormat: 'bare', visibility: 'private',
      properties: { nodepool_build_id: '0000000001', nodepool_upload_id: '0000000002', purpose: 'ci' },
    });
  });

  it('leaves size and checksum null for an image without data', () => {
    const img = toGlanceImage({ id: 'q', name: 'x', status: 'queued', size: null, checksum: null, visibility: 'private' });
    assert.equal(img.size, null);
    assert.equal(img.checksum, null);
    assert.equal(img.diskFormat, null);
  });
});
