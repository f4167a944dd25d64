import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../lib/config/load.js';
import { dibCommand, dibPhase } from '../../../workers/builder/dib-command.js';
import { loopDevicesUnder, mountsUnder } from '../../../workers/builder/dib-cleanup-plan.js';
import { externalImageName } from '../../../lib/images/external-name.js';

const config = parseConfig([
  'diskimages:',
  '  - name: ubuntu-jammy',
  '    elements: [ubuntu-minimal, vm, simple-init]',
  '    release: 22.04',
  '    env-vars: {DIB_RELEASE: jammy, TMPDIR: /override}',
  '    qemu-img-options: compat=0.10',
  '  - name: plain',
  '    dib-cmd: /opt/dib/bin/disk-image-create',
].join('\n'), 'n.yaml');

describe('dibCommand', () => {
  const input = { outBase: '/img/ubuntu-jammy-0000000001', formats: ['qcow2', 'raw'], elementsDir: '/etc/nodepool/elements', tmpDir: '/img/.tmp/x', imageCacheDir: '/img/.tmp/cache', baseEnv: { PATH: '/usr/bin', UNSET: undefined } };

  it('builds DIB\'s argv as Nodepool does, without a shell', () => {
    const { argv } = dibCommand(config.diskimages[0]!, input);
    assert.deepEqual(argv, [
      'disk-image-create', '-x', '-t', 'qcow2,raw', '--checksum', '--no-tmpfs', '--qemu-img-options', 'compat=0.10',
      '--image-cache', '/img/.tmp/cache', '-o', '/img/ubuntu-jammy-0000000001', 'ubuntu-minimal', 'vm', 'simple-init',
    ]);
  });

  it('sets DIB_IMAGE_NAME, DIB_RELEASE, ELEMENTS_PATH, TMPDIR, and lets env-vars win', () => {
    const { env } = dibCommand(config.diskimages[0]!, input);
    assert.equal(env.PATH, '/usr/bin');
    assert.ok(!('UNSET' in env));
    assert.equal(env.DIB_IMAGE_NAME, 'ubuntu-jammy');
    assert.equal(env.DIB_IMAGE_FILENAME, '/img/ubuntu-jammy-0000000001');
    assert.equal(env.ELEMENTS_PATH, '/etc/nodepool/elements');
    assert.equal(env.DIB_RELEASE, 'jammy', 'env-vars override release');
    assert.equal(env.TMPDIR, '/override', 'env-vars override the builder\'s TMPDIR');
  });

  it('uses dib-cmd, an empty release, and no qemu options without qcow2', () => {
    const { argv, env } = dibCommand(config.diskimages[1]!, { ...input, formats: ['raw'], elementsDir: undefined });
    assert.equal(argv[0], '/opt/dib/bin/disk-image-create');
    assert.ok(!argv.includes('--qemu-img-options'));
    assert.equal(env.DIB_RELEASE, '');
    assert.equal(env.TMPDIR, '/img/.tmp/x');
    assert.ok(!('ELEMENTS_PATH' in env));
  });
});

describe('dibPhase', () => {
  it('reads phases from DIB\'s output lines', () => {
    assert.equal(dibPhase('2026-11-21 22:59:48.588 | Running hooks from /tmp/dib_build.abc/hooks/extra-data.d'), 'extra-data');
    assert.equal(dibPhase('dib-run-parts Target: post-install.d'), 'post-install');
    assert.equal(dibPhase('x | Converting image using qemu-img convert'), 'convert');
    assert.equal(dibPhase('Running hooks from /x/hooks/unknown-phase.d'), undefined);
    assert.equal(dibPhase('Get:2 http://mirror bookworm InRelease'), undefined);
  });
});

describe('cleanup plan', () => {
  const mounts = [
    'proc /proc proc rw 0 0',
    'tmpfs /img/.tmp/b1/dib_build.x tmpfs rw 0 0',
    'proc /img/.tmp/b1/dib_build.x/mnt/proc proc rw 0 0',
    'tmpfs /img/.tmp/b10/dib_build.y tmpfs rw 0 0',
    'tmpfs /img/.tmp/b1/with\\040space tmpfs rw 0 0',
  ].join('\n');
  it('lists mounts under the build dir only, deepest first, decoding spaces', () => {
    assert.deepEqual(mountsUnder(mounts, '/img/.tmp/b1'), [
      '/img/.tmp/b1/dib_build.x/mnt/proc', '/img/.tmp/b1/dib_build.x', '/img/.tmp/b1/with space',
    ]);
  });
  it('lists loop devices backed by files under the build dir', () => {
    const losetup = '/dev/loop0 /img/.tmp/b1/dib_image.z/image.raw\n/dev/loop1 /img/.tmp/b10/i.raw\n/dev/loop2 /img/.tmp/b1/x.raw (deleted)\n';
    assert.deepEqual(loopDevicesUnder(losetup, '/img/.tmp/b1'), ['/dev/loop0', '/dev/loop2']);
  });
});

describe('externalImageName', () => {
  it('fills image-name-format', () => {
    const v = { imageName: 'ubuntu', timestamp: 1700000000, buildId: 'ubuntu-0000000003', uploadId: '0000000007' };
    assert.equal(externalImageName('{image_name}-{timestamp}', v), 'ubuntu-1700000000');
    assert.equal(externalImageName('np-{build_id}-{upload_id}-{unknown}', v), 'np-ubuntu-0000000003-0000000007-{unknown}');
  });
});
