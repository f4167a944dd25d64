import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseCloudsYaml, standardSearchPaths } from '../../../../lib/drivers/openstack/clouds-yaml.js';
import { ConfigError } from '../../../../lib/errors.js';
import { SecretRegistry } from '../../../../lib/redact.js';

const GOOD = `
clouds:
  cloud-a:
    auth:
      auth_url: https://keystone.example.com:5000/v3
      username: nodepool
      password: s3cret
      project_name: ci
      user_domain_name: Users
      project_domain_name: Projects
    region_name: RegionTwo
    identity_api_version: 3
  cloud-b:
    auth: {auth-url: "http://k:5000", username: u, password: p, project_id: abc123}
    interface: internalURL
    verify: false
    cacert: /etc/ssl/ca.pem
  by-domain:
    auth: {auth_url: "http://k:5000", username: u, password: p, domain_name: Example}
`;

function problemsOf(text: string, cloud: string): string[] {
  try {
    parseCloudsYaml(text, '/etc/openstack/clouds.yaml', cloud);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    assert.equal(err.file, '/etc/openstack/clouds.yaml');
    return err.message.split('\n');
  }
  assert.fail('expected the cloud to be rejected');
}

describe('clouds.yaml parsing', () => {
  it('reads a project-scoped cloud with its domains, region and interface', () => {
    const c = parseCloudsYaml(GOOD, 'clouds.yaml', 'cloud-a');
    assert.deepEqual(c, {
      cloudName: 'cloud-a',
      authUrl: 'https://keystone.example.com:5000/v3',
      username: 'nodepool',
      password: 's3cret',
      projectName: 'ci',
      userDomainName: 'Users',
      projectDomainName: 'Projects',
      regionName: 'RegionTwo',
      interface: 'public',
      identityApiVersion: '3',
      verify: true,
    });
  });

  it('defaults domains to Default, accepts dashed keys, internalURL, verify and cacert', () => {
    const c = parseCloudsYaml(GOOD, 'clouds.yaml', 'cloud-b');
    assert.equal(c.authUrl, 'http://k:5000');
    assert.equal(c.projectId, 'abc123');
    assert.equal(c.projectName, undefined);
    assert.equal(c.userDomainName, 'Default');
    assert.equal(c.projectDomainName, 'Default');
    assert.equal(c.interface, 'internal');
    assert.equal(c.verify, false);
    assert.equal(c.cacert, '/etc/ssl/ca.pem');
    assert.equal(c.regionName, undefined);
  });

  it('reads a domain-scoped cloud and uses domain_name for the user domain', () => {
    const c = parseCloudsYaml(GOOD, 'clouds.yaml', 'by-domain');
    assert.equal(c.domainName, 'Example');
    assert.equal(c.userDomainName, 'Example');
    assert.equal(c.projectName, undefined);
  });

  it('takes the region from a single-entry regions list', () => {
    const text = 'clouds:\n  r:\n    auth: {auth_url: "http://k", username: u, password: p, project_name: x}\n    regions: [{name: North}]\n';
    assert.equal(parseCloudsYaml(text, 'c.yaml', 'r').regionName, 'North');
  });

  it('names the file and key path of a missing password', () => {
    const text = 'clouds:\n  cloud-a:\n    auth: {auth_url: "http://k", username: u, project_name: x}\n';
    assert.deepEqual(problemsOf(text, 'cloud-a'), ['/etc/openstack/clouds.yaml: clouds.cloud-a.auth.password: expected string, got undefined']);
  });

  it('reports every problem of a cloud at once', () => {
    const text = `clouds:
  bad:
    auth: {auth_url: "keystone:5000", username: 7, password: 123456}
    interface: private
    identity_api_version: 2
    verify: "no"
    auth_type: token
`;
    assert.deepEqual(problemsOf(text, 'bad'), [
      '/etc/openstack/clouds.yaml: clouds.bad.auth_type: only password authentication is supported, got "token"',
      '/etc/openstack/clouds.yaml: clouds.bad.auth.username: expected string, got number 7 (quote it in YAML)',
      '/etc/openstack/clouds.yaml: clouds.bad.auth.password: expected string, got a number (quote it in YAML)',
      '/etc/openstack/clouds.yaml: clouds.bad.auth: needs a scope: project_name, project_id, domain_name or domain_id',
      '/etc/openstack/clouds.yaml: clouds.bad.auth.auth_url: expected an http(s) URL, got "keystone:5000"',
      '/etc/openstack/clouds.yaml: clouds.bad.interface: expected public, internal or admin, got "private"',
      '/etc/openstack/clouds.yaml: clouds.bad.identity_api_version: only Keystone v3 is supported, got number 2',
      '/etc/openstack/clouds.yaml: clouds.bad.verify: expected boolean, got "no"',
    ]);
  });

  it('never prints the value of a secret key, and remembers every secret of the file for scrubbing', () => {
    const text = `clouds:
  c1:
    auth: {auth_url: "http://k:5000", username: u, password: 12345678, project_name: p}
  c2:
    auth: {auth_url: "http://k:5000", username: u, password: [Other-Secret-1], project_name: p, application_credential_secret: App-Secret-2}
`;
    const secrets = new SecretRegistry();
    const problems: string[] = [];
    for (const cloud of ['c1', 'c2']) {
      try {
        parseCloudsYaml(text, 'clouds.yaml', cloud, secrets);
      } catch (err) {
        problems.push((err as Error).message);
      }
    }
    assert.deepEqual(problems, [
      'clouds.yaml: clouds.c1.auth.password: expected string, got a number (quote it in YAML)',
      'clouds.yaml: clouds.c2.auth.password: expected string, got a list',
    ]);
    assert.equal(secrets.scrub('12345678 Other-Secret-1 App-Secret-2'), '<redacted> <redacted> <redacted>');
    // Only values of secret keys: a cloud named like a secret does not make its names secrets.
    const named = new SecretRegistry();
    parseCloudsYaml('clouds:\n  token-lab:\n    auth: {auth_url: "http://k:5000", username: demo-user, password: Lab-Secret-8, project_name: demo-project}\n', 'c.yaml', 'token-lab', named);
    assert.equal(named.scrub('demo-user demo-project http://k:5000 Lab-Secret-8'), 'demo-user demo-project http://k:5000 <redacted>');
  });

  it('reports invalid YAML by reason and place, without quoting the lines (which may hold a password)', () => {
    const [line] = problemsOf('clouds:\n  a:\n    auth: {password: Yaml-Secret-7, username: u\n  b: [\n', 'a');
    assert.match(line ?? '', /^\/etc\/openstack\/clouds\.yaml: invalid YAML at line \d+, column \d+: /);
    assert.ok(!line?.includes('Yaml-Secret-7'), line);
  });

  it('lists the clouds in the file when the named one is missing', () => {
    assert.deepEqual(problemsOf(GOOD, 'cloud-x'), [
      '/etc/openstack/clouds.yaml: clouds.cloud-x: no such cloud (clouds in this file: cloud-a, cloud-b, by-domain)',
    ]);
  });

  it('rejects a file without a clouds mapping, a cloud without auth, and invalid YAML', () => {
    assert.deepEqual(problemsOf('foo: 1\n', 'a'), ['/etc/openstack/clouds.yaml: clouds: expected a mapping, got undefined']);
    assert.deepEqual(problemsOf('clouds:\n  a:\n    region_name: x\n', 'a'), [
      '/etc/openstack/clouds.yaml: clouds.a.auth: expected a mapping, got undefined',
      '/etc/openstack/clouds.yaml: clouds.a.auth.auth_url: expected string, got undefined',
      '/etc/openstack/clouds.yaml: clouds.a.auth.username: expected string, got undefined',
      '/etc/openstack/clouds.yaml: clouds.a.auth.password: expected string, got undefined',
    ]);
    const [line] = problemsOf('clouds: [\n', 'a');
    assert.match(line ?? '', /^\/etc\/openstack\/clouds\.yaml: invalid YAML at line 2, column 1: /);
  });

  it('rejects an ambiguous regions list', () => {
    const text = 'clouds:\n  r:\n    auth: {auth_url: "http://k", username: u, password: p, project_name: x}\n    regions: [a, b]\n';
    assert.deepEqual(problemsOf(text, 'r'), ['/etc/openstack/clouds.yaml: clouds.r.regions: several regions: set region_name to pick one']);
  });
});

describe('clouds.yaml search path', () => {
  it('puts OS_CLIENT_CONFIG_FILE first, then ./, ~/.config/openstack and /etc/openstack', () => {
    assert.deepEqual(standardSearchPaths({ env: { OS_CLIENT_CONFIG_FILE: '/x/c.yaml' }, homeDir: '/home/np', cwd: '/srv' }), [
      '/x/c.yaml', '/srv/clouds.yaml', '/home/np/.config/openstack/clouds.yaml', '/etc/openstack/clouds.yaml',
    ]);
    assert.equal(standardSearchPaths({ env: {}, homeDir: '/h', cwd: '/c' }).length, 3);
  });
});
