import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../../lib/config/load.js';
import { imageTargets } from '../../../../lib/drivers/config-registry.js';
import { ConfigError } from '../../../../lib/errors.js';

const HEAD = ['labels: [{name: small}, {name: big}]', 'diskimages: [{name: deb}, {name: other}]', 'providers:'];

function targets(lines: string[]): ReturnType<typeof imageTargets> {
  const c = parseConfig([...HEAD, ...lines].join('\n'), 'nodepool.yaml');
  const p = c.providers[0];
  assert.ok(p);
  return imageTargets(p);
}

function problems(lines: string[]): string[] {
  try {
    parseConfig([...HEAD, ...lines].join('\n'), 'nodepool.yaml');
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message.split('\n').map((l) => l.trim().replace(/^nodepool\.yaml: /, ''));
  }
  assert.fail('expected the config to be rejected');
}

const qemu = (diskimages: string, extra: string[] = []): string[] => [
  '  - name: vms',
  '    driver: qemu',
  '    image-dir: /var/lib/nodepool/vm-images',
  ...extra,
  `    diskimages: ${diskimages}`,
  '    pools:',
  '      - name: main',
  '        labels: [{name: small, diskimage: deb}, {name: big, diskimage: deb, memory: 2048}]',
];

describe('validate: and post-upload-hook', () => {
  it('leaves targets without validation or hook by default', () => {
    const [t] = targets(qemu('[{name: deb}]'));
    assert.equal(t?.validate, null);
    assert.equal(t?.postUploadHook, null);
  });

  it('resolves the first pool label of the diskimage and the defaults', () => {
    const [t] = targets(qemu('[{name: deb, validate: {}}]', ['    post-upload-hook: /etc/nodepool/hook.sh']));
    assert.deepEqual(t?.validate, { boot: true, command: null, timeout: 600, pool: 'main', label: 'small', username: null, privateKey: null });
    assert.equal(t?.postUploadHook, '/etc/nodepool/hook.sh');
  });

  it('takes a named label, a command with its key, a timeout and a user', () => {
    const [t] = targets(qemu('[{name: deb, validate: {label: big, command: "python3 -V", timeout: 120, username: root, private-key: /etc/nodepool/id_ed25519}}]'));
    assert.deepEqual(t?.validate, {
      boot: true, command: 'python3 -V', timeout: 120, pool: 'main', label: 'big', username: 'root', privateKey: '/etc/nodepool/id_ed25519',
    });
  });

  it('boot: false turns validation off', () => {
    assert.equal(targets(qemu('[{name: deb, validate: {boot: false}}]'))[0]?.validate, null);
  });

  it('names the key path of each mistake', () => {
    assert.deepEqual(problems(qemu('[{name: deb, validate: {command: "true"}}]')), [
      'providers[0].diskimages[0].validate.private-key: a command is run over SSH: name the private key to log in with',
    ]);
    assert.deepEqual(problems(qemu('[{name: deb, validate: {boot: false, command: "true", private-key: /k}}]')), [
      'providers[0].diskimages[0].validate.command: a command needs a booted node: remove it or set boot: true',
    ]);
    assert.deepEqual(problems(qemu('[{name: deb}, {name: other, validate: {}}]')), [
      'providers[0].diskimages[1].validate: no pool label of this provider boots diskimage "other", so there is nothing to validate it with',
    ]);
    assert.deepEqual(problems(qemu('[{name: deb, validate: {label: nope}}]')), [
      'providers[0].diskimages[0].validate.label: label "nope" is not a pool label of this provider that boots diskimage "deb"',
    ]);
    // post-upload-hook takes a command name or relative path as Nodepool 11 does: only the two validate keys are problems.
    assert.deepEqual(problems(qemu('[{name: deb, validate: {timeout: 0, private-key: key}}]', ['    post-upload-hook: hook.sh'])).length, 2);
  });

  it('works the same for openstack providers', () => {
    const [t] = targets([
      '  - name: cloud',
      '    cloud: c1',
      '    post-upload-hook: /usr/local/bin/check-image',
      '    diskimages: [{name: deb, validate: {command: "true", private-key: /etc/nodepool/key}}]',
      '    pools:',
      '      - name: p',
      '        labels: [{name: small, diskimage: deb, min-ram: 512}]',
    ]);
    assert.deepEqual(t?.validate, { boot: true, command: 'true', timeout: 600, pool: 'p', label: 'small', username: null, privateKey: '/etc/nodepool/key' });
    assert.equal(t?.postUploadHook, '/usr/local/bin/check-image');
  });
});
