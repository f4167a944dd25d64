import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { chmod, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import yaml from 'js-yaml';
import { loadConfig } from '../../../lib/config/load.js';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import { Releasers, waitFor } from '../../../lib/lifecycle.js';
import { createRootLogger } from '../../../lib/log.js';
import { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { testImageServices } from '../../support/image-services.js';
import { useLoopbackCloud, type LoopbackCloud } from '../../support/openstack.js';
import { runningProcesses } from '../../support/processes.js';
import {
  createBuilderEnv, fakeDiskimage, glanceAdmin, loopbackProvider, runJob, testClient, type JobEnd,
} from '../../support/builder-env.js';

/** A submitted job whose end lands in `end` (read without awaiting, for bounded waits). */
interface Pending { end?: JobEnd; done: Promise<void> }

function start(client: GearmanClient, fnName: string, payload: unknown): Pending {
  const p: Pending = { done: Promise.resolve() };
  p.done = runJob(client, fnName, payload, { timeoutMs: 60_000 }).then((e) => { p.end = e; }, (err: Error) => {
    p.end = { type: 'exception', message: err.message, statuses: [] };
  });
  return p;
}

// Two upload jobs of one build to two providers in the same format share one qemu-img
// conversion. It used to run under the signal of the job that started it: when that job was
// aborted (its gearmand went away), the conversion was killed and the other job failed with
// "conversion to qcow2 aborted". Each job now only stops waiting; the conversion is cancelled
// once every job waiting on it has been aborted. qemu-img is the real one, behind a gate
// (test-owned script) that holds `convert` while a pause file exists.
describe('builder: a qemu-img conversion shared by two upload jobs', () => {
  let cloud: LoopbackCloud;
  const cleanup = new Releasers();

  before(async () => { cloud = await useLoopbackCloud(); });
  afterEach(() => cleanup.releaseAll());
  after(async () => {
    await cloud?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  /** Two gearmands, a builder on both with a built raw image, a gated qemu-img, and log lines. */
  async function setup(): Promise<{
    a: GearmandHandle; b: GearmandHandle; ca: GearmanClient; cb: GearmanClient; id: string; dir: string; imagesDir: string;
    pause: string; lines: Array<Record<string, unknown>>; providers: [string, string];
  }> {
    const [a, b] = await Promise.all([startGearmand(), startGearmand()]);
    cleanup.add('gearmand a', () => a.stop());
    cleanup.add('gearmand b', () => b.stop());
    const tag = randomBytes(3).toString('hex');
    const providers: [string, string] = [`conv-a-${tag}`, `conv-b-${tag}`];
    const env = await createBuilderEnv({
      gearmanPort: a.port, cloud,
      diskimages: [fakeDiskimage('conv', { formats: ['raw'] })],
      providers: providers.map((p) => loopbackProvider(p, ['conv'], 'qcow2')),
    });
    cleanup.add('env', () => env.remove());
    const doc = yaml.load(await readFile(env.configPath, 'utf8')) as Record<string, unknown>;
    doc['gearman-servers'] = [{ host: '127.0.0.1', port: a.port }, { host: '127.0.0.1', port: b.port }];
    await writeFile(env.configPath, yaml.dump(doc));
    const config = loadConfig(env.configPath);

    const pause = path.join(env.dir, 'convert.pause');
    const gateDir = path.join(env.dir, 'gate');
    await mkdir(gateDir);
    const gate = path.join(gateDir, 'qemu-img');
    const real = execFileSync('bash', ['-c', 'command -v qemu-img'], { encoding: 'utf8' }).trim();
    await writeFile(gate, [
      '#!/bin/bash',
      `if [ "$1" = convert ] && [ -e '${pause}' ]; then touch '${pause}.started'; while [ -e '${pause}' ]; do sleep 0.05; done; fi`,
      `exec '${real}' "$@"`, '',
    ].join('\n'));
    await chmod(gate, 0o755);

    const lines: Array<Record<string, unknown>> = [];
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
    });
    const log = createRootLogger({ level: 'info', format: 'json', stream });
    const builder = new DibBuilder({
      config, log, hostname: 'builder-conv', uploadWorkers: 4, qemuImg: gate,
      env: { PATH: process.env.PATH, HOME: process.env.HOME }, reconnect: { initialMs: 50, maxMs: 500 }, killGraceMs: 2000,
      imageServices: testImageServices(() => config.cloudsFile, log),
    });
    cleanup.add('builder', () => builder.stop({ abortAfterMs: 2000 }));
    await builder.start();
    const [ca, cb] = await Promise.all([testClient(a.port), testClient(b.port)]);
    cleanup.add('client a', () => ca.stop());
    cleanup.add('client b', () => cb.stop());
    const id = 'conv-0000000001';
    const built = await runJob(ca, fn.imageBuild('conv'), { 'image-id': id }, { unique: id });
    assert.equal(built.type, 'complete', built.message);
    await writeFile(pause, '');
    return { a, b, ca, cb, id, dir: env.dir, imagesDir: env.imagesDir, pause, lines, providers };
  }

  /** The gearmand whose job started the conversion (its handle names the port). */
  function starterPort(lines: Array<Record<string, unknown>>): number {
    const line = lines.find((l) => l.message === 'converting image');
    const m = /^H:p(\d+):/.exec(String(line?.job));
    assert.ok(m, `a 'converting image' line with a job handle: ${JSON.stringify(line)}`);
    return Number(m[1]);
  }

  /** True while a qemu-img convert is held at the gate of `dir` (the gate script is running). */
  function gateHolding(dir: string): boolean {
    const gate = path.join(dir, 'gate', 'qemu-img');
    return readdirSync('/proc').filter((n) => /^\d+$/.test(n)).some((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0');
        return argv.includes(gate) && argv.includes('convert');
      } catch {
        return false; // gone
      }
    });
  }

  it('aborting the job that started it leaves the conversion to the other job, which uploads', async () => {
    const s = await setup();
    const jobA = start(s.ca, fn.imageUpload(s.id), { 'image-name': 'conv', provider: s.providers[0] });
    const jobB = start(s.cb, fn.imageUpload(s.id), { 'image-name': 'conv', provider: s.providers[1] });
    await waitFor(() => existsSync(`${s.pause}.started`), { timeoutMs: 20_000, what: 'qemu-img convert held at the gate' });
    await waitFor(() => s.lines.some((l) => l.message === 'waiting for the conversion another upload started'), { timeoutMs: 10_000, what: 'the second job waiting on the same conversion' });
    assert.equal(s.lines.filter((l) => l.message === 'converting image').length, 1, 'one conversion for both jobs');

    // The gearmand of the starting job goes away: that job's signal aborts.
    const [victim, survivor] = starterPort(s.lines) === s.a.port ? [s.a, jobB] : [s.b, jobA];
    await victim.kill();
    await waitFor(() => s.lines.some((l) => l.message === 'job failed'), { timeoutMs: 10_000, what: 'the aborted job to end' });
    assert.ok(!survivor.end, `the other job ended when the first was aborted: ${survivor.end?.type} ${survivor.end?.message}`);
    assert.ok(gateHolding(s.dir), 'the shared conversion is still running');

    await rm(s.pause, { force: true });
    const end = await waitFor(() => survivor.end, { timeoutMs: 60_000, what: 'the surviving upload to end' });
    assert.equal(end.type, 'complete', end.message);
    assert.equal(end.json?.format, 'qcow2');
    const files = await readdir(s.imagesDir);
    assert.ok(files.includes(`${s.id}.qcow2`), files.join());
    assert.ok(!files.some((f) => f.endsWith('.converting')), files.join());
    const glance = await glanceAdmin(cloud);
    await glance.delete(String(end.json?.['external-id']));
  });

  it('cancels the conversion once every job waiting on it is aborted: qemu-img stopped, no file left', async () => {
    const s = await setup();
    // Both jobs through one gearmand, which then goes away.
    const jobs = [
      start(s.ca, fn.imageUpload(s.id), { 'image-name': 'conv', provider: s.providers[0] }),
      start(s.ca, fn.imageUpload(s.id), { 'image-name': 'conv', provider: s.providers[1] }),
    ];
    await waitFor(() => existsSync(`${s.pause}.started`), { timeoutMs: 20_000, what: 'qemu-img convert held at the gate' });
    await waitFor(() => s.lines.some((l) => l.message === 'waiting for the conversion another upload started'), { timeoutMs: 10_000, what: 'the second job waiting on the same conversion' });
    await s.a.kill();
    await waitFor(() => !gateHolding(s.dir), { timeoutMs: 15_000, what: 'the conversion process stopped' });
    await waitFor(async () => !(await readdir(s.imagesDir)).some((f) => f.endsWith('.converting')), { timeoutMs: 10_000, what: 'the partial conversion removed' });
    const files = await readdir(s.imagesDir);
    assert.ok(!files.includes(`${s.id}.qcow2`), files.join());
    assert.ok(jobs.every((j) => !j.end || j.end.type !== 'complete'));
    await rm(s.pause, { force: true });
  });
});
