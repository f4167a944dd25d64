/**
 * The quick start (`make run`) without running it: its nodepool.yaml as scripts/run-quickstart.ts
 * writes it (checked by the real loader), the console lines and token it prints (checked by the
 * real write-API verifier), and the Debian packages `make run` installs (from make itself).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { decodeJwt } from 'jose';
import { loadConfig } from '../../lib/config/load.js';
import { loadAuthenticators } from '../../lib/web-auth/authenticators.js';
import {
  CONSOLE_TOKEN_TTL_S, CONSOLE_TOKEN_USER, consoleLines, consoleToken, consoleUrl, newAuthSecret, quickstartConfigText,
  withQemuBlock, writeQuickstartConfig, type QuickstartFills,
} from '../../scripts/quickstart-config.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..', '..');
const TEMPLATE = await readFile(path.join(ROOT, 'config', 'quickstart.yaml'), 'utf8');

/** A host key as sshd.hostKey gives it (any well-formed one; nothing connects). */
const HOST_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH+v/4bhKPQuCaKKAqHYYPid8y7B/Zg+osZkzAfJFMFH';

/** Fills as the script makes them, with made-up ports and the fake DIB. */
function fills(dir: string): QuickstartFills {
  return {
    gearmanPort: 4730, root: ROOT, dir, cloudsYaml: path.join(dir, 'clouds.yaml'),
    staticNodes: [{ name: '127.0.0.1', 'connection-port': 2222, labels: ['static-host'], 'host-key': HOST_KEY, 'max-parallel-jobs': 2 }],
    dibCmd: path.join(ROOT, 'test/fixtures/bin/fake-dib'), dibEnv: { FAKE_DIB_DELAY: '0.3', FAKE_DIB_SIZE_MIB: '64' },
  };
}

/** A temporary directory for `fn`, removed afterwards. */
async function inTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-quickstart-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('quick start config', () => {
  for (const qemu of [true, false]) {
    it(`loads with the console on its port and one local HS256 authenticator (qemu provider ${qemu ? 'kept' : 'left out'})`, () => inTempDir(async (dir) => {
      const secret = newAuthSecret();
      const file = path.join(dir, 'nodepool.yaml');
      await writeQuickstartConfig(file, quickstartConfigText(withQemuBlock(TEMPLATE, qemu), fills(dir), { port: 18_005, secret }));
      const config = loadConfig(file);
      assert.equal(config.webapp.port, 18_005);
      assert.equal(config.webapp.listenAddress, '127.0.0.1');
      assert.deepEqual(config.webapp.auth.map((a) => ({ ...a })), [{
        name: 'local', driver: 'HS256', secret, issuer: 'nodepool', audience: 'nodepool',
        roleClaim: 'nodepool.role', userClaim: 'sub', skew: 0,
      }]);
      assert.equal(config.gearmanServers[0]?.port, 4730);
      assert.deepEqual(config.providers.map((p) => p.name), ['local-hosts', 'loopback', 'loopback-raw', ...(qemu ? ['local-vms'] : [])]);
    }));
  }

  it('keeps a secret of digits a string (quoted in the YAML)', () => inTempDir(async (dir) => {
    const secret = '12'.repeat(32);
    const file = path.join(dir, 'nodepool.yaml');
    await writeQuickstartConfig(file, quickstartConfigText(withQemuBlock(TEMPLATE, false), fills(dir), { port: 8005, secret }));
    assert.equal(loadConfig(file).webapp.auth[0]?.secret, secret);
  }));

  it('makes a new 32-byte secret for each run', () => {
    const [a, b] = [newAuthSecret(), newAuthSecret()];
    assert.match(a, /^[0-9a-f]{64}$/);
    assert.notEqual(a, b);
  });

  it('writes the config readable by its owner only, replacing an earlier run\'s file', () => inTempDir(async (dir) => {
    const file = path.join(dir, 'nodepool.yaml');
    await writeFile(file, 'old: run\n', { mode: 0o644 });
    await writeQuickstartConfig(file, 'new: run\n');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal(await readFile(file, 'utf8'), 'new: run\n');
  }));
});

describe('quick start console lines', () => {
  it('print the console URL, an operator token the write API accepts for 8 hours, and how to make another; never the secret', () => inTempDir(async (dir) => {
    const secret = newAuthSecret();
    const file = path.join(dir, 'nodepool.yaml');
    await writeQuickstartConfig(file, quickstartConfigText(withQemuBlock(TEMPLATE, false), fills(dir), { port: 18_006, secret }));
    const config = loadConfig(file);
    const url = consoleUrl(config.webapp.port);
    assert.equal(url, 'http://127.0.0.1:18006/');
    const token = await consoleToken(config.webapp.auth);
    const lines = consoleLines({ url, token, configPath: file });
    assert.deepEqual(lines, [
      'the console: http://127.0.0.1:18006/',
      'sign in with this operator token (valid 8 hours):',
      token,
      `make another: node --import tsx bin/nodepool.ts create-auth-token --user you --role operator --expires 3600 -c ${file}`,
    ]);
    assert.ok(!lines.join('\n').includes(secret), 'the secret is printed');

    const outcome = await (await loadAuthenticators(config.webapp.auth)).authenticate(`Bearer ${token}`);
    assert.deepEqual(outcome, { ok: true, identity: { user: CONSOLE_TOKEN_USER, role: 'operator', authenticator: 'local' } });
    const claims = decodeJwt(token);
    assert.equal((claims.exp ?? 0) - (claims.iat ?? 0), CONSOLE_TOKEN_TTL_S);
    assert.equal(CONSOLE_TOKEN_TTL_S, 8 * 3600);
  }));

  it('refuses a token signed by another run\'s secret', () => inTempDir(async (dir) => {
    const file = path.join(dir, 'nodepool.yaml');
    await writeQuickstartConfig(file, quickstartConfigText(withQemuBlock(TEMPLATE, false), fills(dir), { port: 8005, secret: newAuthSecret() }));
    const other = path.join(dir, 'other.yaml');
    await writeQuickstartConfig(other, quickstartConfigText(withQemuBlock(TEMPLATE, false), fills(dir), { port: 8005, secret: newAuthSecret() }));
    const token = await consoleToken(loadConfig(other).webapp.auth);
    const outcome = await (await loadAuthenticators(loadConfig(file).webapp.auth)).authenticate(`Bearer ${token}`);
    assert.equal(outcome.ok, false);
  }));
});

/** The packages a recipe of `make -n <target>` passes to scripts/install-apt-deps.sh, per call. */
async function aptInstalls(target: string): Promise<string[][]> {
  const { stdout } = await run('make', ['-n', '--no-print-directory', target], { cwd: ROOT });
  return stdout.split('\n').filter((l) => l.includes('scripts/install-apt-deps.sh'))
    .map((l) => l.split(/\s+/).slice(l.split(/\s+/).indexOf('scripts/install-apt-deps.sh') + 1).filter(Boolean));
}

/** The test cloud's heavy parts `make run` must not install: it uses only Keystone and Glance, on SQLite. */
const NOT_RUN = ['nova-api', 'nova-conductor', 'nova-scheduler', 'python3-nova', 'placement-api', 'neutron-server', 'rabbitmq-server',
  'mariadb-server', 'python3-pymysql', 'chromium', 'zookeeper', 'python3-kazoo'];

describe('make run packages', () => {
  it('installs only its own list, part of what make test installs, without Nova, RabbitMQ, MariaDB, Neutron, Chromium or ZooKeeper', async () => {
    const runInstalls = await aptInstalls('run');
    assert.equal(runInstalls.length, 1, 'make run calls install-apt-deps.sh once');
    const runPackages = runInstalls[0] ?? [];
    const [testPackages = []] = await aptInstalls('apt-deps');
    assert.ok(runPackages.length > 0 && testPackages.length > runPackages.length);
    assert.deepEqual(runPackages.filter((p) => !testPackages.includes(p)), [], 'packages of make run that make test does not install');
    assert.deepEqual(NOT_RUN.filter((p) => runPackages.includes(p)), []);
    assert.deepEqual(NOT_RUN.filter((p) => !testPackages.includes(p)), [], 'make test still installs the whole test cloud');
  });

  it('installs the package of every program the quick start and its loopback cloud run', async () => {
    const [runPackages = []] = await aptInstalls('apt-run-deps');
    // The package holding each program (behind its alternatives link), as dpkg says on this machine (make test installed them).
    const programs = ['/usr/sbin/gearmand', '/usr/bin/glance-api', '/usr/bin/keystone-wsgi-public', '/usr/lib/uwsgi/plugins/python3_plugin.so',
      '/usr/sbin/sshd', '/usr/bin/ssh-keygen', '/usr/bin/qemu-img', '/usr/bin/disk-image-create', '/usr/sbin/debootstrap',
      '/usr/bin/qemu-system-x86_64', '/usr/bin/genisoimage'];
    const { stdout: depends } = await run('dpkg-query', ['-W', '-f=${Depends}\n', ...runPackages]);
    const reachable = new Set([...runPackages, ...depends.split(/[,|\n]/).map((d) => d.trim().split(/[\s:]/)[0] ?? '').filter(Boolean)]);
    const missing: string[] = [];
    for (const program of programs) {
      const { stdout } = await run('dpkg', ['-S', await realpath(program)]);
      const owner = stdout.split(':')[0]?.trim() ?? '';
      if (!reachable.has(owner)) missing.push(`${program} (${owner})`);
    }
    assert.deepEqual(missing, [], 'programs whose package make run neither installs nor pulls in directly');
  });
});
