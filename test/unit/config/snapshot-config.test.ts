import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, parseConfig } from '../../../lib/config/load.js';
import { SecretRegistry } from '../../../lib/redact.js';
import { problemsOf } from '../../support/config-problems.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

const QEMU = '{name: vms, driver: qemu, image-dir: /srv/images}';

describe('builder: snapshot config', () => {
  it('loads the snapshot: block with its defaults', () => {
    const c = parseConfig(`providers: [${QEMU}]
diskimages:
  - name: snap
    builder: snapshot
    snapshot: {provider: vms, base-image: /srv/base.qcow2, setup: [./prepare.sh, --ci], env-vars: {MODE: ci}}
`, 'n.yaml');
    const d = c.diskimages[0];
    assert.equal(d?.builder, 'snapshot');
    assert.deepEqual(JSON.parse(JSON.stringify(d?.snapshot)), {
      provider: 'vms', baseImage: '/srv/base.qcow2', setup: ['./prepare.sh', '--ci'], envVars: { MODE: 'ci' },
      setupTimeout: 3600, memory: 1024, cpus: 1,
    });
  });

  it('names each key of a snapshot: block that is wrong, with its path', () => {
    assert.deepEqual(problemsOf(`providers: [${QEMU}]
diskimages:
  - {name: e, builder: snapshot, snapshot: {provider: vms, setup: []}}
  - {name: f, builder: snapshot, snapshot: {provider: vms, base-image: x, setup: [s], env-vars: {1BAD: x}}}
`), [
      'nodepool.yaml: diskimages[0].snapshot.setup: expected at least 1 argument(s), got 0',
      'nodepool.yaml: diskimages[1].snapshot.env-vars.1BAD: expected an environment variable name (letters, digits and _, not starting with a digit)',
    ]);
  });

  it('checks snapshot: against builder and the provider it names', () => {
    assert.deepEqual(problemsOf(`providers: [${QEMU}, {name: lab, driver: static, pools: []}]
diskimages:
  - {name: a, builder: snapshot}
  - {name: b, builder: snapshot, elements: [vm], snapshot: {provider: nowhere, base-image: x, setup: [s]}}
  - {name: c, builder: snapshot, snapshot: {provider: lab, base-image: x, setup: [s]}}
  - {name: d, snapshot: {provider: vms, base-image: x, setup: [s]}}
  - {name: g, builder: snapshot, command: [make], snapshot: {provider: vms, base-image: x, setup: [s]}}
`), [
      'nodepool.yaml: diskimages[0].snapshot: expected where and how to build (builder: snapshot), got nothing',
      'nodepool.yaml: diskimages[1].elements: only used with builder: dib (this diskimage is built by a snapshot)',
      'nodepool.yaml: diskimages[3].snapshot: only used with builder: snapshot (this diskimage is built by DIB)',
      'nodepool.yaml: diskimages[4].command: only used with builder: command (this diskimage is built by a snapshot)',
    ]);
    assert.deepEqual(problemsOf(`providers: [${QEMU}, {name: lab, driver: static, pools: []}, {name: cloud, driver: openstack, cloud: c}]
diskimages:
  - {name: b, builder: snapshot, snapshot: {provider: nowhere, base-image: x, setup: [s]}}
  - {name: c, builder: snapshot, snapshot: {provider: lab, base-image: x, setup: [s]}}
  - {name: e, builder: snapshot, snapshot: {provider: cloud, base-image: Debian 12, setup: [s]}}
  - {name: f, builder: snapshot, snapshot: {provider: cloud, base-image: Debian 12, setup: [s], username: debian}}
  - {name: h, builder: snapshot, snapshot: {provider: vms, base-image: /b.qcow2, setup: [s]}}
`), [
      'nodepool.yaml: diskimages[0].snapshot.provider: provider "nowhere" is not defined in providers',
      'nodepool.yaml: diskimages[1].snapshot.provider: provider "lab" (driver static) cannot boot build instances: expected a provider of driver openstack, qemu',
      'nodepool.yaml: diskimages[2].snapshot: username is required on a provider of driver openstack: the login user of base-image "Debian 12" (cloud-init\'s default user, e.g. debian)',
    ]);
  });

  it('takes base-image or base-diskimage, one of them, and a base-diskimage the provider takes', () => {
    const vms = QEMU.replace('}', ', diskimages: [{name: base}]}');
    assert.deepEqual(problemsOf(`providers: [${vms}]
diskimages:
  - {name: base}
  - {name: n, builder: snapshot, snapshot: {provider: vms, setup: [s]}}
  - {name: b, builder: snapshot, snapshot: {provider: vms, base-image: /b.qcow2, base-diskimage: base, setup: [s]}}
`), [
      'nodepool.yaml: diskimages[1].snapshot: expected base-image or base-diskimage, got neither',
      'nodepool.yaml: diskimages[2].snapshot: expected one of base-image and base-diskimage, got both',
    ]);
    assert.deepEqual(problemsOf(`providers: [${vms}]
diskimages:
  - {name: base}
  - {name: other}
  - {name: self, builder: snapshot, snapshot: {provider: vms, base-diskimage: self, setup: [s]}}
  - {name: u, builder: snapshot, snapshot: {provider: vms, base-diskimage: nosuch, setup: [s]}}
  - {name: o, builder: snapshot, snapshot: {provider: vms, base-diskimage: other, setup: [s]}}
  - {name: ok, builder: snapshot, snapshot: {provider: vms, base-diskimage: base, setup: [s]}}
`), [
      'nodepool.yaml: diskimages[2].snapshot.base-diskimage: a diskimage cannot be built on itself',
      'nodepool.yaml: diskimages[3].snapshot.base-diskimage: diskimage "nosuch" is not defined in diskimages',
      'nodepool.yaml: diskimages[4].snapshot.base-diskimage: provider "vms" does not take diskimage "other", so it has no upload of it to boot: add it to the provider\'s diskimages',
    ]);
  });

  it('takes a secret-named setup env-var as a secret from the moment the file is loaded', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'nodepool-snap-config-'));
    try {
      const file = path.join(dir, 'nodepool.yaml');
      await writeFile(file, `providers: [${QEMU}]
diskimages:
  - {name: s, builder: snapshot, snapshot: {provider: vms, base-image: /b.qcow2, setup: [s], env-vars: {REGISTRY_TOKEN: tok-s3cr3t-value}}}
`);
      const secrets = new SecretRegistry();
      loadConfig(file, { secrets });
      assert.equal(secrets.scrub('token tok-s3cr3t-value here'), 'token <redacted> here');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
