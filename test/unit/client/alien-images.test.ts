import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { alienImages } from '../../../lib/client/alien-images.js';
import type { ListedImage } from '../../../lib/drivers/contract/image-service.js';
import type { UploadRecord } from '../../../lib/store/models.js';

function image(externalId: string, name: string, properties: Record<string, string>): ListedImage {
  return { externalId, name, status: 'active', properties };
}

function upload(id: string, externalId: string | null, state: UploadRecord['state'], provider = 'cloud-a'): UploadRecord {
  return {
    id, buildId: 'ubuntu-jammy-0000000001', diskimage: 'ubuntu-jammy', provider, imageName: 'ubuntu-jammy', state,
    stateTime: 0, created: 0, externalId, externalName: null, format: 'qcow2', reason: null, progress: null,
  };
}

describe('alienImages', () => {
  const images = [
    image('img-ready', 'ubuntu-jammy-1', { nodepool_build_id: 'ubuntu-jammy-0000000001', nodepool_upload_id: '0000000001' }),
    image('img-failed', 'ubuntu-jammy-2', { nodepool_build_id: 'ubuntu-jammy-0000000002', nodepool_upload_id: '0000000002' }),
    image('img-norecord', 'ubuntu-jammy-3', { nodepool_upload_id: '0000000009' }),
    image('img-uploading', 'ubuntu-jammy-4', { nodepool_build_id: 'ubuntu-jammy-0000000004', nodepool_upload_id: '0000000004' }),
    image('img-operator', 'centos-official', { os_distro: 'centos' }),
    image('img-other-provider', 'ubuntu-jammy-5', { nodepool_build_id: 'b', nodepool_provider_name: 'cloud-b' }),
    image('img-build-only', 'a-build-only', { nodepool_build_id: 'ubuntu-jammy-0000000007' }),
  ];
  const uploads = [
    upload('0000000001', 'img-ready', 'ready'),
    upload('0000000002', 'img-failed', 'failed'),
    // Still uploading: the cloud id is not recorded yet, the upload id property matches.
    upload('0000000004', null, 'uploading'),
    // Another provider's record of the same cloud id does not account for ours.
    upload('0000000008', 'img-build-only', 'ready', 'cloud-b'),
  ];

  it('lists tagged images that no accounted upload of the provider matches, by name', () => {
    assert.deepEqual(alienImages('cloud-a', images, uploads), [
      { provider: 'cloud-a', name: 'a-build-only', externalId: 'img-build-only' },
      { provider: 'cloud-a', name: 'ubuntu-jammy-2', externalId: 'img-failed' },
      { provider: 'cloud-a', name: 'ubuntu-jammy-3', externalId: 'img-norecord' },
    ]);
  });

  it('lists nothing when every tagged image is accounted for', () => {
    assert.deepEqual(alienImages('cloud-a', images.slice(0, 1), uploads), []);
  });
});
