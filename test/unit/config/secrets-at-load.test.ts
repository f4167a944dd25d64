import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { configSecrets, loadConfig, parseConfig } from '../../../lib/config/load.js';
import { ConfigError } from '../../../lib/errors.js';
import { REDACTED, SecretRegistry } from '../../../lib/redact.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'nodepool-secrets-at-load-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const PROVIDER = 'providers: [{name: p1, driver: openstack, cloud: c1, diskimages: [{name: d1}]}]\n';
const DISKIMAGE = 'diskimages: [{name: d1, elements: [e]}]\n';

function write(name: string, text: string): string {
  const file = path.join(dir, name);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

describe('config secrets are known from the moment the config is loaded', () => {
  it("registers the clouds-file's passwords, the secure file's env-vars and secret-named env-vars of nodepool.yaml", () => {
    const clouds = write('named/clouds.yaml', 'clouds:\n  c1:\n    auth: {auth_url: "http://k/v3", username: u, password: "Cl0uds Pw one", project_name: p}\n'
      + '  c2:\n    auth: {password: 4815162342, application_credential_secret: App-Cred-Sec}\n');
    const secure = write('named/secure.yaml', 'diskimages: [{name: d1, env-vars: {DIB_MIRROR_USER: MirrorUser-1}}]\n');
    const file = write('named/nodepool.yaml', `clouds-file: ${clouds}\n${PROVIDER}diskimages: [{name: d1, elements: [e], env-vars: {DIB_ROOT_PASSWORD: Root-Pw-7, DIB_RELEASE_X: plain}}]\n`);
    const secrets = new SecretRegistry();
    const c = loadConfig(file, { secureFile: secure, secrets });
    const text = 'pw Cl0uds Pw one; digits 4815162342; app App-Cred-Sec; mirror MirrorUser-1; root Root-Pw-7; plain';
    assert.equal(secrets.scrub(text), `pw ${REDACTED}; digits ${REDACTED}; app ${REDACTED}; mirror ${REDACTED}; root ${REDACTED}; plain`);
    assert.ok(configSecrets(c).includes('Cl0uds Pw one'));
  });

  it("finds the clouds.yaml in the standard locations (OS_CLIENT_CONFIG_FILE, ./, ~/.config/openstack/) when the config names none", () => {
    const home = path.join(dir, 'home');
    write('home/.config/openstack/clouds.yaml', 'clouds:\n  c1:\n    auth: {password: Home-Clouds-Pw}\n');
    const file = write('std/nodepool.yaml', `${PROVIDER}${DISKIMAGE}`);
    const secrets = new SecretRegistry();
    loadConfig(file, { env: {}, host: { homeDir: home, cwd: path.join(dir, 'std') }, secrets });
    assert.equal(secrets.scrub('Home-Clouds-Pw'), REDACTED);
    const viaEnv = write('env/clouds.yaml', 'clouds:\n  c1:\n    auth: {password: Env-Clouds-Pw}\n');
    const secrets2 = new SecretRegistry();
    loadConfig(file, { env: { OS_CLIENT_CONFIG_FILE: viaEnv }, host: { homeDir: home, cwd: dir }, secrets: secrets2 });
    assert.equal(secrets2.scrub('Env-Clouds-Pw Home-Clouds-Pw'), `${REDACTED} Home-Clouds-Pw`);
  });

  it('takes the secret lines of a clouds.yaml that is not valid YAML, and reads none without an openstack provider', () => {
    const clouds = write('bad/clouds.yaml', 'clouds:\n  c1:\n    auth:\n      password: "Bad Yaml Pw"\n     username: [\n');
    const file = write('bad/nodepool.yaml', `clouds-file: ${clouds}\n${PROVIDER}${DISKIMAGE}`);
    const secrets = new SecretRegistry();
    loadConfig(file, { secrets });
    assert.equal(secrets.scrub('Bad Yaml Pw'), REDACTED);
    const none = write('bad/static.yaml', `clouds-file: ${clouds}\n${DISKIMAGE}`);
    const secrets2 = new SecretRegistry();
    loadConfig(none, { secrets: secrets2 });
    assert.equal(secrets2.size, 0);
  });

  it('replaces a substituted secret in a ConfigError raised before any registry holds it', () => {
    const token = 'Subst-Tok-31x';
    const env = { NODEPOOL_API_TOKEN: token, NODEPOOL_ZK_PASSWORD: 'Zk-Pw-Subst' };
    const text = `${DISKIMAGE}providers: [{name: p1, driver: openstack, cloud: c1, pools: [{name: x, max-servers: "%(NODEPOOL_API_TOKEN)"}]}]\n`
      + 'zookeeper-servers: [{host: "%(NODEPOOL_ZK_PASSWORD)", port: "%(NODEPOOL_ZK_PASSWORD)"}]\n';
    let err: unknown;
    try {
      parseConfig(text, 'nodepool.yaml', { env });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof ConfigError, String(err));
    assert.ok(!err.message.includes(token) && !err.message.includes('Zk-Pw-Subst'), err.message);
    assert.match(err.message, /max-servers: .*<redacted>/);
    // The same text without the substitution names what it found, as before.
    assert.throws(() => parseConfig(text.replace('%(NODEPOOL_API_TOKEN)', 'two'), 'nodepool.yaml', { env }), /max-servers: .*"two"/);
  });
});
