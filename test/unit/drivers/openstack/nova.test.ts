import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServerBody, isPrivateIpv4, serverAddresses, toNovaServer } from '../../../../lib/drivers/openstack/nova.js';

describe('Nova bodies and addresses', () => {
  it('tells private IPv4 ranges from public ones', () => {
    for (const a of ['10.0.0.5', '172.16.1.1', '172.31.255.1', '192.168.0.9', '100.64.0.1', '127.0.0.1']) assert.equal(isPrivateIpv4(a), true, a);
    for (const a of ['172.32.0.1', '8.8.8.8', '100.128.0.1', '198.51.100.7']) assert.equal(isPrivateIpv4(a), false, a);
  });

  it('prefers a public v4 address for the interface, then a private one, then v6', () => {
    const both = serverAddresses({
      private: [
        { addr: '10.0.0.5', version: 4, 'OS-EXT-IPS:type': 'fixed' },
        { addr: '2001:db8::5', version: 6, 'OS-EXT-IPS:type': 'fixed' },
        { addr: '10.1.0.9', version: 4, 'OS-EXT-IPS:type': 'floating' },
      ],
    });
    assert.deepEqual(both, { interfaceIp: '10.1.0.9', publicIpv4: '10.1.0.9', privateIpv4: '10.0.0.5', publicIpv6: '2001:db8::5' });
    assert.deepEqual(serverAddresses({ private: [{ addr: '10.0.0.5', version: 4 }] }),
      { interfaceIp: '10.0.0.5', publicIpv4: null, privateIpv4: '10.0.0.5', publicIpv6: null });
    assert.deepEqual(serverAddresses({ v6: [{ addr: 'fd00::1', version: 6 }, { addr: '2001:db8::1', version: 6 }] }),
      { interfaceIp: '2001:db8::1', publicIpv4: null, privateIpv4: null, publicIpv6: '2001:db8::1' });
    assert.deepEqual(serverAddresses(undefined), { interfaceIp: null, publicIpv4: null, privateIpv4: null, publicIpv6: null });
  });

  it('reads a server with its fault, zone, metadata and embedded flavor', () => {
    const s = toNovaServer({
      id: 'abc', name: 'small-p1-0000000001', status: 'ERROR', metadata: { nodepool_node_id: '0000000001', n: 5 },
      addresses: {}, 'OS-EXT-AZ:availability_zone': 'nova', fault: { code: 500, message: 'No valid host was found. ' },
      flavor: { original_name: 'np.huge', vcpus: 4096, ram: 2048 },
    });
    assert.equal(s.fault, 'No valid host was found. ');
    assert.equal(s.az, 'nova');
    assert.deepEqual(s.metadata, { nodepool_node_id: '0000000001' });
    assert.deepEqual(s.flavor, { name: 'np.huge', vcpus: 4096, ram: 2048 });
  });

  it('builds a create body with networks, base64 userdata and optional keys', () => {
    const body = createServerBody({
      name: 'n1', imageId: 'img', flavorId: 'f1', networkIds: ['net-1'], metadata: { a: 'b' },
      keyName: 'k', availabilityZone: 'az1', securityGroups: ['default'], userdata: '#cloud-config\n', configDrive: true,
    });
    assert.deepEqual(body, {
      server: {
        name: 'n1', flavorRef: 'f1', imageRef: 'img', networks: [{ uuid: 'net-1' }], metadata: { a: 'b' }, key_name: 'k',
        availability_zone: 'az1', security_groups: [{ name: 'default' }], user_data: Buffer.from('#cloud-config\n').toString('base64'), config_drive: true,
      },
    });
    const minimal = createServerBody({ name: 'n', imageId: 'i', flavorId: 'f', networkIds: [], metadata: {} }).server as Record<string, unknown>;
    assert.equal(minimal.networks, 'auto');
    assert.equal('key_name' in minimal, false);
  });

  it('boots from a volume made from the image when asked', () => {
    const body = createServerBody({ name: 'n', imageId: 'img', flavorId: 'f', networkIds: [], metadata: {}, volumeSize: 80 }).server as Record<string, unknown>;
    assert.equal(body.imageRef, '');
    assert.deepEqual(body.block_device_mapping_v2, [{ boot_index: 0, uuid: 'img', source_type: 'image', destination_type: 'volume', volume_size: 80, delete_on_termination: true }]);
  });
});
