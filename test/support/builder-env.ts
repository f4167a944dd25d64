/**
 * Test support for builder tests: a temp directory with images-dir and build-log-dir, a
 * nodepool.yaml written from an object and checked by the real loader, builders in-process
 * (DibBuilder) or as `nodepool-builder` child processes, and a Gearman client for jobs.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { loadConfig } from '../../lib/config/load.js';
import type { Config } from '../../lib/config/schema.js';
import { loadCloud } from '../../lib/drivers/openstack/clouds-yaml.js';
import { OpenStackImageService } from '../../lib/drivers/openstack/glance-image-service.js';
import { GearmanClient, type JobResult } from '../../lib/gearman/client.js';
import type { Logger } from '../../lib/log.js';
import { testLogger } from './test-log.js';
import { DibBuilder } from '../../workers/builder/dib-builder.js';
import { testImageServices } from './image-services.js';
import type { LoopbackCloud } from './openstack.js';
import { startProcess, type TrackedProcess } from './processes.js';
import { nodeScript } from './node-command.js';

export const FAKE_DIB = path.resolve('test/fixtures/bin/fake-dib');
const ROOT = path.resolve('.');

/** A diskimage entry as written in YAML. */
export type RawDiskimage = Record<string, unknown> & { name: string };
/** A provider entry as written in YAML. */
export type RawProvider = Record<string, unknown> & { name: string };

/** Options of {@link createBuilderEnv}. */
export interface BuilderEnvOptions {
  gearmanPort: number;
  cloud?: LoopbackCloud;
  /** A clouds.yaml of the test's own (instead of the loopback cloud's). */
  cloudsFile?: string;
  diskimages?: RawDiskimage[];
  providers?: RawProvider[];
  /** Subdirectory name, for several builders in one test. */
  name?: string;
  /** The config's `elements-dir` (DIB's ELEMENTS_PATH). */
  elementsDir?: string;
}

/** One builder's files and config. */
export interface BuilderEnv {
  dir: string;
  imagesDir: string;
  buildLogDir: string;
  configPath: string;
  config: Config;
  /** Rewrites the config file with changed diskimages/providers, returns the loaded config. */
  rewrite(changes: { diskimages?: RawDiskimage[]; providers?: RawProvider[] }): Promise<Config>;
  remove(): Promise<void>;
}

/** A fake-dib diskimage; `env` are FAKE_DIB_* knobs and other env-vars. */
export function fakeDiskimage(name: string, extra: Record<string, unknown> = {}, env: Record<string, string> = {}): RawDiskimage {
  return { name, elements: ['fake-element'], release: 'bookworm', 'dib-cmd': FAKE_DIB, 'env-vars': env, ...extra };
}

/** An openstack provider on the loopback cloud that uploads `diskimages`. */
export function loopbackProvider(name: string, diskimages: string[], imageFormat = 'qcow2'): RawProvider {
  return { name, driver: 'openstack', cloud: 'loopback', 'image-format': imageFormat, diskimages: diskimages.map((d) => ({ name: d, meta: { purpose: 'test' } })) };
}

export { testLogger };

export async function createBuilderEnv(opts: BuilderEnvOptions): Promise<BuilderEnv> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `nodepool-builder-${opts.name ?? 'test'}-`));
  const imagesDir = path.join(dir, 'images');
  const buildLogDir = path.join(dir, 'logs');
  await mkdir(imagesDir, { recursive: true });
  const configPath = path.join(dir, 'nodepool.yaml');
  let diskimages = opts.diskimages ?? [];
  let providers = opts.providers ?? [];
  const write = async (): Promise<Config> => {
    const doc: Record<string, unknown> = {
      'gearman-servers': [{ host: '127.0.0.1', port: opts.gearmanPort }],
      'images-dir': imagesDir,
      'build-log-dir': buildLogDir,
      'state-dir': path.join(dir, 'state'),
      diskimages,
      providers,
    };
    const cloudsFile = opts.cloudsFile ?? opts.cloud?.cloudsYamlPath;
    if (cloudsFile) doc['clouds-file'] = cloudsFile;
    if (opts.elementsDir) doc['elements-dir'] = opts.elementsDir;
    await writeFile(configPath, yaml.dump(doc));
    return loadConfig(configPath);
  };
  const env: BuilderEnv = {
    dir, imagesDir, buildLogDir, configPath,
    config: await write(),
    async rewrite(changes) {
      diskimages = changes.diskimages ?? diskimages;
      providers = changes.providers ?? providers;
      env.config = await write();
      return env.config;
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
  return env;
}


/** An in-process DibBuilder for `env` (not started); `processEnv` is the build commands' environment. */
export function inProcessBuilder(env: BuilderEnv, opts: {
  hostname?: string; log?: Logger; uploadWorkers?: number; processEnv?: Record<string, string | undefined>; uploadRetryDelayMs?: number;
} = {}): DibBuilder {
  const log = opts.log ?? testLogger();
  return new DibBuilder({
    config: env.config,
    log,
    hostname: opts.hostname ?? 'builder-a',
    uploadWorkers: opts.uploadWorkers ?? 4,
    env: opts.processEnv ?? { PATH: process.env.PATH, HOME: process.env.HOME },
    reconnect: { initialMs: 50, maxMs: 500 },
    killGraceMs: 2000,
    ...(opts.uploadRetryDelayMs !== undefined ? { uploadRetryDelayMs: opts.uploadRetryDelayMs } : {}),
    imageServices: testImageServices(() => env.config.cloudsFile, log),
  });
}

/** `nodepool-builder -c <config>` as a child process (its log goes to `<dir>/builder.log`). */
export function builderProcess(env: BuilderEnv, opts: { hostname?: string; shutdownTimeoutS?: number } = {}): TrackedProcess {
  return startProcess('nodepool-builder', process.execPath, [
    ...nodeScript('bin/nodepool-builder.ts'), '-c', env.configPath,
    '--hostname', opts.hostname ?? 'builder-a', '--shutdown-timeout', String(opts.shutdownTimeoutS ?? 10), '--log-level', 'debug',
  ], { cwd: ROOT, logFile: path.join(env.dir, 'builder.log'), env: { ...process.env, NODEPOOL_CONFIG: '' } });
}

/** A started Gearman client on 127.0.0.1:port. */
export async function testClient(port: number): Promise<GearmanClient> {
  const client = new GearmanClient({ servers: [{ host: '127.0.0.1', port }], clientId: 'test-client', log: testLogger() });
  await client.start();
  return client;
}

/** What a job ended with, decoded for assertions. */
export interface JobEnd {
  type: JobResult['type'];
  json?: Record<string, unknown>;
  message: string;
  statuses: Array<[number, number]>;
}

/** Submits a job with a JSON (or raw string) payload and waits for its end (at most `timeoutMs`, default 2 min). */
export async function runJob(client: GearmanClient, fnName: string, payload: unknown, opts: { unique?: string; raw?: boolean; timeoutMs?: number } = {}): Promise<JobEnd> {
  const statuses: Array<[number, number]> = [];
  const data = opts.raw ? String(payload) : JSON.stringify(payload);
  const job = client.submit(fnName, data, { unique: opts.unique, onStatus: (n, d) => statuses.push([n, d]), createdTimeoutMs: 10_000 });
  const timeoutMs = opts.timeoutMs ?? 120_000;
  let timer: NodeJS.Timeout | undefined;
  const r = await Promise.race([
    job.result,
    new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${fnName} did not end within ${timeoutMs} ms`)), timeoutMs); }),
  ]).finally(() => clearTimeout(timer));
  if (r.type === 'complete') {
    const text = r.data.toString('utf8');
    return { type: r.type, json: text ? JSON.parse(text) as Record<string, unknown> : {}, message: '', statuses };
  }
  const message = r.type === 'exception' ? r.data.toString('utf8') : Buffer.concat(r.warnings).toString('utf8');
  return { type: r.type, message, statuses };
}

/** An admin image service on the loopback cloud, to look at Glance directly. */
export async function glanceAdmin(cloud: LoopbackCloud): Promise<OpenStackImageService> {
  return OpenStackImageService.create(await loadCloud(cloud.adminCloudName, { path: cloud.cloudsYamlPath }));
}
