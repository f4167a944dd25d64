import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../lib/config/load.js';
import { ConfigError } from '../../../lib/errors.js';
import { BUILD_COMMAND_VARS, buildCommand } from '../../../workers/builder/build-command.js';

const config = parseConfig([
  'diskimages:',
  '  - name: windows-2022',
  '    builder: command',
  '    command: [/usr/local/bin/packer-build, /etc/nodepool/packer/windows.pkr.hcl, --only, qemu]',
  '    release: 2022',
  '    build-timeout: 7200',
  '    env-vars: {PACKER_CACHE_DIR: /var/cache/packer, TMPDIR: /override, NODEPOOL_OUTPUT: /elsewhere}',
  '  - name: plain',
  '    builder: command',
  '    command: [ext4-build]',
  '  - name: debian',
  '    elements: [debian-minimal]',
].join('\n'), 'n.yaml');

function problems(yaml: string): string[] {
  try {
    parseConfig(yaml, 'n.yaml');
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.problems.map((p) => `${p.path}: ${p.message}`);
  }
  return [];
}

describe('buildCommand', () => {
  const input = { imageId: 'windows-2022-0000000007', outBase: '/img/windows-2022-0000000007', formats: ['qcow2', 'raw'], tmpDir: '/img/.tmp/windows-2022-0000000007', baseEnv: { PATH: '/usr/bin', HOME: '/root', UNSET: undefined } };

  it('runs the command as given, without a shell, in the build\'s TMPDIR', () => {
    const { argv, cwd } = buildCommand(config.diskimages[0]!, input);
    assert.deepEqual(argv, ['/usr/local/bin/packer-build', '/etc/nodepool/packer/windows.pkr.hcl', '--only', 'qemu']);
    assert.equal(cwd, '/img/.tmp/windows-2022-0000000007');
  });

  it('passes the contract: image id, diskimage, output base, formats, release and build-timeout', () => {
    const { env } = buildCommand(config.diskimages[0]!, input);
    assert.equal(env.NODEPOOL_IMAGE_ID, 'windows-2022-0000000007');
    assert.equal(env.NODEPOOL_DISKIMAGE, 'windows-2022');
    assert.equal(env.NODEPOOL_OUTPUT, '/img/windows-2022-0000000007');
    assert.equal(env.NODEPOOL_FORMATS, 'qcow2,raw');
    assert.equal(env.NODEPOOL_RELEASE, '2022');
    assert.equal(env.NODEPOOL_BUILD_TIMEOUT, '7200');
    assert.deepEqual(Object.keys(env).filter((k) => k.startsWith('NODEPOOL_')).sort(), [...BUILD_COMMAND_VARS].sort());
  });

  it('keeps the builder\'s environment, adds env-vars over it and TMPDIR, but not over the contract', () => {
    const { env } = buildCommand(config.diskimages[0]!, input);
    assert.equal(env.PATH, '/usr/bin');
    assert.ok(!('UNSET' in env));
    assert.equal(env.PACKER_CACHE_DIR, '/var/cache/packer');
    assert.equal(env.TMPDIR, '/override', 'env-vars override TMPDIR, as with DIB');
    assert.equal(env.NODEPOOL_OUTPUT, '/img/windows-2022-0000000007', 'the output stays where the builder looks');
  });

  it('sets TMPDIR and an empty release by default', () => {
    const { env } = buildCommand(config.diskimages[1]!, { ...input, formats: ['qcow2'] });
    assert.equal(env.TMPDIR, '/img/.tmp/windows-2022-0000000007');
    assert.equal(env.NODEPOOL_RELEASE, '');
    assert.equal(env.NODEPOOL_FORMATS, 'qcow2');
    assert.equal(env.NODEPOOL_BUILD_TIMEOUT, '28800');
  });
});

describe('diskimage builder and command keys', () => {
  it('defaults to builder: dib without a command', () => {
    assert.equal(config.diskimages[2]?.builder, 'dib');
    assert.equal(config.diskimages[2]?.command, undefined);
    assert.equal(config.diskimages[0]?.builder, 'command');
  });

  it('reports a command builder without a command, and an empty one', () => {
    assert.deepEqual(problems('diskimages:\n  - name: a\n    builder: command\n'), ['diskimages[0].command: expected the argv to run (builder: command), got nothing']);
    assert.deepEqual(problems('diskimages:\n  - name: a\n    builder: command\n    command: []\n'), ['diskimages[0].command: expected at least 1 argument(s), got 0']);
  });

  it('reports a command on a DIB diskimage, elements on a command one, and an unknown builder', () => {
    assert.deepEqual(problems('diskimages:\n  - name: a\n    command: [x]\n'), ['diskimages[0].command: only used with builder: command (this diskimage is built by DIB)']);
    assert.deepEqual(problems('diskimages:\n  - name: a\n    builder: command\n    command: [x]\n    elements: [vm]\n'), ['diskimages[0].elements: only used with builder: dib (this diskimage is built by its command)']);
    assert.deepEqual(problems('diskimages:\n  - name: a\n    builder: packer\n'), ['diskimages[0].builder: expected one of dib, command, snapshot, got "packer"']);
  });
});
