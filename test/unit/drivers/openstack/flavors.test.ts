import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chooseFlavor, describeWish, flavorResources, type Flavor } from '../../../../lib/drivers/openstack/flavors.js';

const f = (id: string, name: string, vcpus: number, ram: number, disabled = false): Flavor => ({ id, name, vcpus, ram, disk: 1, disabled });
const FLAVORS = [
  f('3', 'm1.medium', 2, 4096),
  f('1', 'm1.tiny', 1, 512),
  f('2', 'm1.small', 1, 2048),
  f('9', 'np.huge', 4096, 2048),
  f('7', 'gpu.small', 1, 2048),
  f('8', 'm1.old', 1, 1024, true),
];

describe('flavor choice', () => {
  it('picks the smallest flavor with at least min-ram', () => {
    const m1 = FLAVORS.filter((x) => x.name.startsWith('m1.'));
    assert.equal(chooseFlavor(m1, { minRam: 1024 })?.name, 'm1.small');
    assert.equal(chooseFlavor(m1, { minRam: 0 })?.name, 'm1.tiny');
    assert.equal(chooseFlavor(m1, { minRam: 2049 })?.name, 'm1.medium');
  });

  it('breaks ties on RAM by fewer vcpus, then by name', () => {
    assert.equal(chooseFlavor(FLAVORS, { minRam: 1500 })?.name, 'gpu.small');
  });

  it('with min-ram, flavor-name is a substring filter', () => {
    assert.equal(chooseFlavor(FLAVORS, { minRam: 1024, flavorName: 'm1' })?.name, 'm1.small');
    assert.equal(chooseFlavor(FLAVORS, { minRam: 1024, flavorName: 'huge' })?.name, 'np.huge');
    assert.equal(chooseFlavor(FLAVORS, { minRam: 8192, flavorName: 'm1' }), undefined);
  });

  it('without min-ram, flavor-name matches a name or an id exactly', () => {
    assert.equal(chooseFlavor(FLAVORS, { flavorName: 'm1.tiny' })?.id, '1');
    assert.equal(chooseFlavor(FLAVORS, { flavorName: '3' })?.name, 'm1.medium');
    assert.equal(chooseFlavor(FLAVORS, { flavorName: 'm1' }), undefined);
    assert.equal(chooseFlavor(FLAVORS, {}), undefined);
  });

  it('never picks a disabled flavor', () => {
    assert.equal(chooseFlavor(FLAVORS, { flavorName: 'm1.old' }), undefined);
    assert.equal(chooseFlavor(FLAVORS, { minRam: 600 })?.name, 'gpu.small');
  });

  it('gives a flavor its quota cost and describes a wish', () => {
    assert.deepEqual(flavorResources(f('2', 'm1.small', 1, 2048)), { cores: 1, ram: 2048, instances: 1 });
    assert.equal(describeWish({ minRam: 1024, flavorName: 'm1' }), 'min-ram 1024 (name contains "m1")');
    assert.equal(describeWish({ flavorName: 'm1.tiny' }), 'flavor "m1.tiny"');
  });
});
