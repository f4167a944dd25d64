import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkGearmanServers, gearmanServersProblem, imageLifecycleMode } from '../../../lib/config/gearman-servers.js';
import { parseConfig } from '../../../lib/config/load.js';
import { DISKIMAGE_NAME_MAX_LENGTH } from '../../../lib/config/names.js';
import { int, MAX_TIMER_MS, MAX_TIMER_SECONDS, numberArgument, seconds } from '../../../lib/config/schema-kit.js';
import { ConfigError } from '../../../lib/errors.js';
import { DISKIMAGE_NAME_RE } from '../../../lib/images/image-file.js';

/** The problems a config text is rejected with, one line each ([] when it loads). */
function problemsOf(lines: string[]): string[] {
  try {
    parseConfig(lines.join('\n'), 'nodepool.yaml');
    return [];
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.message.split('\n');
  }
}

const TOO_LONG = (n: number): string => `expected at most 2147483 seconds (about 24.8 days, the longest delay Node's timers hold), got ${n}`;

/** Every duration key in seconds, with a config that sets it to `v`. */
const DURATIONS: Array<[path: string, config: (v: number) => string[]]> = [
  ['diskimages[0].build-timeout', (v) => ['diskimages: [{name: d, build-timeout: ' + v + '}]']],
  ['diskimages[0].rebuild-age', (v) => ['diskimages: [{name: d, rebuild-age: ' + v + '}]']],
  ...['interval', 'retry-delay', 'max-retry-delay', 'build-timeout-grace', 'leak-check-interval', 'config-removal-grace'].map((k): [string, (v: number) => string[]] =>
    [`image-lifecycle.${k}`, (v) => [`image-lifecycle: {${k}: ${v}${k === 'retry-delay' ? `, max-retry-delay: ${MAX_TIMER_SECONDS}` : ''}}`]]),
  ...['interval', 'delete-interval', 'cleanup-interval', 'session-ttl', 'takeover-timeout'].map((k): [string, (v: number) => string[]] =>
    [`launcher.${k}`, (v) => [`launcher: {${k}: ${v}}`]]),
  ...['launch-timeout', 'boot-timeout', 'rate'].map((k): [string, (v: number) => string[]] =>
    [`providers[0].${k}`, (v) => ['providers:', `  - {name: p, cloud: c, ${k}: ${v}}`]]),
  ['providers[0].pools[0].nodes[0].timeout', (v) => ['labels: [{name: l}]', 'providers:',
    `  - {name: s, driver: static, pools: [{name: main, nodes: [{name: h1, labels: [l], timeout: ${v}}]}]}`]],
];

describe('config limits', () => {
  it('bounds every duration in seconds by what a Node timer can hold (2^31-1 ms)', () => {
    assert.equal(MAX_TIMER_SECONDS, 2_147_483);
    assert.ok(MAX_TIMER_SECONDS * 1000 <= MAX_TIMER_MS && (MAX_TIMER_SECONDS + 1) * 1000 > MAX_TIMER_MS);
    for (const [path, config] of DURATIONS) {
      assert.deepEqual(problemsOf(config(MAX_TIMER_SECONDS)), [], `${path} at the limit loads`);
      assert.deepEqual(problemsOf(config(3_000_000)), [`nodepool.yaml: ${path}: ${TOO_LONG(3_000_000)}`], path);
    }
  });

  it('keeps the old wording below the minimum and for non-numbers, with fractions where they were allowed', () => {
    assert.deepEqual(problemsOf(['diskimages: [{name: d, build-timeout: 0}]']), ['nodepool.yaml: diskimages[0].build-timeout: expected integer >= 1, got 0']);
    assert.deepEqual(problemsOf(['launcher: {interval: soon}']), ['nodepool.yaml: launcher.interval: expected number >= 0.05, got "soon"']);
    assert.equal(parseConfig('launcher: {session-ttl: 2.5}', 'n.yaml').launcher.sessionTtl, 2.5);
    // A fleet member's session lapses 4 s before the takeover bound: ZooKeeper's shortest session is 4 s.
    assert.deepEqual(problemsOf(['launcher: {takeover-timeout: 5}']), ['nodepool.yaml: launcher.takeover-timeout: expected number >= 8, got 5']);
    assert.equal(parseConfig('launcher: {}', 'n.yaml').launcher.takeoverTimeout, 30);
    assert.deepEqual(problemsOf(['diskimages: [{name: d, build-timeout: 1.5}]']), ['nodepool.yaml: diskimages[0].build-timeout: expected integer >= 1, got 1.5']);
  });

  it('rejects a max-retry-delay below retry-delay, saying both', () => {
    assert.deepEqual(problemsOf(['image-lifecycle: {retry-delay: 600, max-retry-delay: 60}']), [
      'nodepool.yaml: image-lifecycle.max-retry-delay: expected at least retry-delay (600), got 60: it caps the delay that starts at retry-delay',
    ]);
    // Against the default of the other key too (retry-delay 60, max-retry-delay 3600).
    assert.deepEqual(problemsOf(['image-lifecycle: {max-retry-delay: 30}']), [
      'nodepool.yaml: image-lifecycle.max-retry-delay: expected at least retry-delay (60), got 30: it caps the delay that starts at retry-delay',
    ]);
    assert.equal(parseConfig('image-lifecycle: {retry-delay: 90, max-retry-delay: 90}', 'n.yaml').imageLifecycle.maxRetryDelay, 90);
  });

  it('says the length limit of a diskimage name, at the top level and under a provider', () => {
    assert.ok(DISKIMAGE_NAME_RE.test('a'.repeat(DISKIMAGE_NAME_MAX_LENGTH)) && !DISKIMAGE_NAME_RE.test('a'.repeat(DISKIMAGE_NAME_MAX_LENGTH + 1)),
      'the limit is the one the name pattern enforces');
    const long = 'x'.repeat(70);
    assert.deepEqual(problemsOf([`diskimages: [{name: ${long}}]`, 'providers:', `  - {name: p, cloud: c, diskimages: [{name: ${long}}]}`]), [
      `nodepool.yaml: diskimages[0].name: expected a diskimage name of at most 51 characters, got 70 characters ("${'x'.repeat(57)}...")`,
      `nodepool.yaml: providers[0].diskimages[0].name: expected a diskimage name of at most 51 characters, got 70 characters ("${'x'.repeat(57)}...")`,
    ]);
    assert.deepEqual(problemsOf(['diskimages: [{name: -x}]']), [
      'nodepool.yaml: diskimages[0].name: expected a diskimage name (1 to 51 letters, digits, ".", "_" or "-", starting with a letter or digit), got "-x"',
    ]);
  });

  it('reads command-line numbers with the same rules, naming the flag, what it got and what it expects', () => {
    const timeout = numberArgument('--timeout', seconds({ min: 1, fractions: true }));
    assert.equal(timeout('2.5'), 2.5);
    assert.equal(timeout(30), 30, 'defaults arrive as numbers');
    assert.throws(() => timeout('abc'), { name: 'RangeError', message: '--timeout: expected number >= 1, got "abc"' });
    assert.throws(() => timeout(''), { message: '--timeout: expected number >= 1, got ""' });
    assert.throws(() => timeout('3000000'), { message: `--timeout: ${TOO_LONG(3_000_000)}` });
    assert.throws(() => timeout(['1', '2']), { message: '--timeout: expected number >= 1, got a list' });
    assert.throws(() => numberArgument('--priority', int({ min: 0, max: 999 }))('1e3'), { message: '--priority: expected integer from 0 to 999, got 1000' });
  });

  it('needs a gearman server only for a builder: a server with diskimages and none is launcher-only', () => {
    const message = 'nodepool.yaml: gearman-servers: expected at least one gearman server, got none: nodepool-builder takes all its jobs from Gearman';
    const withImages = parseConfig('diskimages: [{name: a}, {name: b}]', 'nodepool.yaml');
    checkGearmanServers(withImages);
    assert.equal(imageLifecycleMode(withImages), 'off (launcher-only: no gearman-servers)');
    assert.throws(() => checkGearmanServers(withImages, { forBuilder: true }), (err: unknown) => err instanceof ConfigError && err.message === message);
    const none = { gearmanServers: [], file: 'nodepool.yaml' };
    assert.equal(gearmanServersProblem({ ...none, diskimages: [] }), undefined);
    assert.equal(imageLifecycleMode({ ...none, diskimages: [] }), 'off (no gearman-servers)');
    assert.deepEqual(gearmanServersProblem({ ...none, diskimages: [] }, { forBuilder: true }), {
      path: 'gearman-servers', message: 'expected at least one gearman server, got none: nodepool-builder takes all its jobs from Gearman',
    });
    const full = parseConfig('gearman-servers: [{host: g}]\ndiskimages: [{name: a}]', 'nodepool.yaml');
    assert.equal(imageLifecycleMode(full), 'on');
    checkGearmanServers(parseConfig('gearman-servers: [{host: g}]\ndiskimages: [{name: a}]', 'nodepool.yaml'), { forBuilder: true });
  });
});
