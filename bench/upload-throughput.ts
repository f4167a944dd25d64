/**
 * Glance upload throughput: our OpenStackImageService (in a child process, so its peak RSS
 * is its own) against `curl -T` with a token, same file, same loopback Glance; ours both
 * without and with the builder's streaming hash (the `onData` tap: sha256 checked against the
 * recorded one, plus Glance's own algorithm, compared with Glance's hash afterwards).
 *
 *   node --import tsx bench/upload-throughput.ts [--size-mib 2048] [--rounds 3] [--chunk-kib 1024] [--all-hashes]
 *
 * `--all-hashes` adds a row hashing sha256 + sha512 + md5 at once.
 * Uses the cloud named by NODEPOOL_TEST_CLOUD when set, else starts (and stops) one.
 * Targets: ours ≥ 0.9 × curl, the streaming hash costs < 10 % of our throughput, peak RSS < 150 MB.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCloud } from '../lib/drivers/openstack/clouds-yaml.js';
import { GlanceClient } from '../lib/drivers/openstack/glance.js';
import { OpenStackImageService } from '../lib/drivers/openstack/glance-image-service.js';
import { KeystoneSession } from '../lib/drivers/openstack/keystone.js';
import { sha256File } from '../workers/builder/image-repository.js';
import { compareCloudHash, UploadDigest } from '../workers/builder/upload-digest.js';
import { useLoopbackCloud } from '../test/support/openstack.js';

const MiB = 1024 * 1024;
const self = fileURLToPath(import.meta.url);

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] ? (process.argv[i + 1] as string) : fallback;
}

/** Writes `sizeMiB` MiB of incompressible data in 1 MiB chunks (never the whole file in memory). */
async function makeFile(file: string, sizeMiB: number): Promise<void> {
  const chunk = randomBytes(MiB);
  const fh = await open(file, 'w');
  try {
    for (let i = 0; i < sizeMiB; i++) {
      chunk.writeUInt32LE(i, 0); // every chunk differs
      chunk.writeUInt32LE(i * 2654435761 >>> 0, MiB / 2);
      await fh.write(chunk, 0, MiB);
    }
  } finally {
    await fh.close();
  }
}

function statusKiB(text: string, key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

/** What the child uploads; credentials come from the clouds.yaml, not from argv. */
interface ChildSpec {
  cloudsYamlPath: string;
  cloudName: string;
  file: string;
  name: string;
  chunkKiB?: number;
  /**
   * Hash the bytes sent as the builder does: sha256 plus the algorithm the image service
   * expects Glance to use (`cloud`), or sha256 + sha512 + md5 (`all`); unset: no hashing.
   */
  hash?: 'cloud' | 'all';
  /** The file's sha256, as the build recorded it. */
  sha256?: string;
}

interface ChildResult {
  ms: number;
  /** CPU time of the child during the upload (user + system, ms). */
  cpuMs: number;
  id: string;
  maxRssKiB: number;
  hwmKiB: number;
  baselineRssKiB: number;
}

/** Child mode: one upload through OpenStackImageService, then its own figures on stdout. */
async function child(spec: ChildSpec): Promise<void> {
  const glance = spec.chunkKiB ? { chunkBytes: spec.chunkKiB * 1024 } : {};
  const svc = await OpenStackImageService.create(await loadCloud(spec.cloudName, { path: spec.cloudsYamlPath }), undefined, { glance });
  // Glance validates a new token with Keystone on first use; curl's token is already known.
  await svc.glance.listImages({ name: 'bench-warm-up' });
  const baselineRssKiB = statusKiB(await readFile('/proc/self/status', 'utf8'), 'VmRSS');
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const algos = spec.hash === 'all' ? ['sha512', 'md5'] : svc.cloudHashAlgos();
  const digest = spec.hash && spec.sha256
    ? new UploadDigest({ file: spec.file, size: (await stat(spec.file)).size, sha256: spec.sha256 }, algos)
    : undefined;
  const up = await svc.upload({ name: spec.name, format: 'raw', filePath: spec.file, properties: { bench: 'upload-throughput' }, ...(digest ? { onData: digest.tap } : {}) });
  if (digest) {
    // What the builder does after an upload: all bytes seen, sha256 as recorded, the cloud's hash equal.
    digest.check();
    const verdict = compareCloudHash(up.cloudHash, digest);
    if (verdict.kind !== 'match') throw new Error(`hash not verified: ${JSON.stringify(verdict)}`);
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const status = await readFile('/proc/self/status', 'utf8');
  const out: ChildResult = { ms, cpuMs: (cpu.user + cpu.system) / 1000, id: up.externalId, maxRssKiB: process.resourceUsage().maxRSS, hwmKiB: statusKiB(status, 'VmHWM'), baselineRssKiB };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

function runChild(spec: ChildSpec): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', self, '--child', JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`upload child exited ${code}`));
      resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}') as ChildResult);
    });
  });
}

/** curl's upload: create the image (our client), `curl -T` the file, then check it is active. */
async function curlUpload(session: KeystoneSession, glance: GlanceClient, file: string, name: string, size: number): Promise<{ ms: number; id: string }> {
  const t0 = performance.now();
  const res = await session.request(`${glance.baseUrl}/v2/images`, {
    method: 'POST', json: { name, disk_format: 'raw', container_format: 'bare', visibility: 'private', bench: 'upload-throughput' },
  });
  const id = (JSON.parse(res.body) as { id: string }).id;
  const token = await session.token();
  const code = await new Promise<number | null>((resolve, reject) => {
    const p = spawn('curl', ['-sS', '-f', '-o', '/dev/null', '-H', `X-Auth-Token: ${token}`, '-H', 'Content-Type: application/octet-stream',
      '-T', file, `${glance.baseUrl}/v2/images/${id}/file`], { stdio: ['ignore', 'inherit', 'inherit'] });
    p.on('error', reject);
    p.on('exit', resolve);
  });
  const img = await glance.getImage(id);
  const ms = performance.now() - t0;
  if (code !== 0 || img?.status !== 'active' || img.size !== size) throw new Error(`curl upload failed: exit ${code}, image ${img?.status} size ${img?.size}`);
  return { ms, id };
}

/** Flush dirty pages (the previous upload's store file) so each upload starts from the same state. */
function settle(): Promise<void> {
  return new Promise((resolve) => spawn('sync', [], { stdio: 'ignore' }).on('exit', () => resolve()).on('error', () => resolve()));
}

/** What one upload of a round is. */
type Variant = 'curl' | 'plain' | 'hash' | 'all';

const LABEL: Readonly<Record<Variant, string>> = {
  curl: 'curl -T                        ',
  plain: 'ours, no hash                  ',
  hash: 'ours, sha256 + Glance\'s sha512 ',
  all: 'ours, sha256 + sha512 + md5    ',
};

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function main(): Promise<void> {
  const sizeMiB = Number(arg('--size-mib', '2048'));
  const rounds = Number(arg('--rounds', '3'));
  const chunkKiB = Number(arg('--chunk-kib', '0')) || undefined;
  const size = sizeMiB * MiB;
  const cloud = await useLoopbackCloud({ log: (l) => console.error(l) });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-bench-'));
  const images: string[] = [];
  let glance: GlanceClient | undefined;
  try {
    const creds = await loadCloud(cloud.cloudName, { path: cloud.cloudsYamlPath });
    const session = await KeystoneSession.authenticate(creds);
    glance = new GlanceClient(session);
    const file = path.join(dir, 'bench.raw');
    const tw = performance.now();
    await makeFile(file, sizeMiB);
    console.error(`wrote ${sizeMiB} MiB in ${((performance.now() - tw) / 1000).toFixed(1)} s`);
    const tr = performance.now();
    const sha256 = await sha256File(file);
    console.error(`sha256 of the file (the build's record, not timed) in ${((performance.now() - tr) / 1000).toFixed(1)} s`);
    const g = glance;
    const variants: Variant[] = ['curl', 'plain', 'hash', ...(process.argv.includes('--all-hashes') ? ['all' as const] : [])];
    const times = new Map<Variant, number[]>(variants.map((v) => [v, []]));
    const children: ChildResult[] = [];
    const cpuMs = new Map<Variant, number[]>(variants.map((v) => [v, []]));
    const run = async (v: Variant, r: number): Promise<number> => {
      await settle();
      if (v === 'curl') {
        const c = await curlUpload(session, g, file, `bench-curl-${r}`, size);
        images.push(c.id);
        await g.deleteImage(c.id);
        return c.ms;
      }
      const o = await runChild({
        cloudsYamlPath: cloud.cloudsYamlPath, cloudName: cloud.cloudName, file, name: `bench-${v}-${r}`, chunkKiB,
        ...(v === 'plain' ? {} : { hash: v === 'all' ? 'all' : 'cloud', sha256 }),
      });
      images.push(o.id);
      await g.deleteImage(o.id);
      children.push(o);
      cpuMs.get(v)?.push(o.cpuMs);
      return o.ms;
    };
    for (let r = 0; r < rounds; r++) {
      // Rotate who goes first: the previous upload's write-back should not favour any.
      const order = variants.map((_, i) => variants[(i + r) % variants.length] as Variant);
      const line: string[] = [];
      for (const v of order) {
        const ms = await run(v, r);
        times.get(v)?.push(ms);
        line.push(`${LABEL[v].trim()} ${(size / 1e3 / ms).toFixed(0)} MB/s`);
      }
      console.error(`round ${r + 1}: ${line.join(', ')}`);
    }
    const rate = (v: Variant): number => size / 1e3 / median(times.get(v) ?? []);
    const peakMB = Math.max(...children.map((o) => Math.max(o.maxRssKiB, o.hwmKiB))) * 1024 / 1e6;
    const baseMB = Math.max(...children.map((o) => o.baselineRssKiB)) * 1024 / 1e6;
    const cpuPerGiB = (v: Variant): number => median(cpuMs.get(v) ?? []) / 1000 / (size / 2 ** 30);
    console.log(`upload of ${sizeMiB} MiB to the loopback Glance (median of ${rounds}; ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}):`);
    for (const v of variants) {
      const vsCurl = v === 'curl' ? '' : `  ${(rate(v) / rate('curl')).toFixed(2)} × curl, our CPU ${cpuPerGiB(v).toFixed(2)} s/GiB`;
      // Per round against the upload without hash of the same round (drift on a shared machine cancels), then the median.
      const paired = median((times.get(v) ?? []).map((ms, r) => (times.get('plain')?.[r] ?? ms) / ms));
      const cost = v === 'hash' || v === 'all' ? `; the hash costs ${((1 - paired) * 100).toFixed(1)} % of the throughput without (median of per-round ratios)` : '';
      console.log(`  ${LABEL[v]}: ${rate(v).toFixed(0).padStart(5)} MB/s${vsCurl}${cost}`);
    }
    console.log('  targets: ours >= 0.9 × curl; the streaming hash costs < 10 % of the throughput');
    console.log(`  our peak RSS: ${peakMB.toFixed(0)} MB (before the upload: ${baseMB.toFixed(0)} MB; target < 150 MB)`);
  } finally {
    for (const id of images) await glance?.deleteImage(id).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    await cloud.stop();
  }
}

const childSpec = arg('--child', '');
(childSpec ? child(JSON.parse(childSpec) as ChildSpec) : main()).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
