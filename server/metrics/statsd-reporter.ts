/**
 * The server's statsd metrics under Nodepool's names (doc/source/operation.rst), sent when
 * bin/ finds `STATSD_HOST`:
 * - `nodepool.dib_image_build.<image>.status.duration` (ms), `.status.rc` (0 ready, 1 failed),
 *   `.status.last_build` (epoch s) and `.<format>.size` (bytes) when a build ends;
 * - `nodepool.image_update.<image>.<provider>` (timer and counter) when an upload is ready;
 * - `nodepool.launch.<result>`, `.launch.provider.<provider>[.<az>].<result>` and
 *   `.launch.requestor.<requestor>.<result>` (timer and counter) per launch;
 * - gauges every `gaugeIntervalMs`: `nodepool.nodes.<state>`, `nodepool.provider.<p>.nodes.<state>`,
 *   `nodepool.label.<l>.nodes.<state>` (every state, 0 included) and `nodepool.provider.<p>.max_servers`;
 * - `nodepool.provider.<p>.leaked.images` and `.leaked.servers` (counters) when leaked resources are taken over for deletion.
 * Not Nodepool's (its uploads have no validation state), sent with the gauges:
 * - `nodepool.uploads.<state>` and `nodepool.provider.<p>.uploads.<state>` (gauges, every
 *   upload state, `validating` included, 0 included);
 * - `nodepool.image_validation.<image>.<provider>.passed|failed` (counters), validations that
 *   ended, counted from the upload records of each round (validation-outcomes.ts).
 */
import type { Config } from '../../lib/config/schema.js';
import { imageTargets, providerPools } from '../../lib/drivers/config-registry.js';
import { coerceError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { statsdSegment, type StatsdClient } from '../../lib/metrics/statsd-client.js';
import { NODE_STATES, UPLOAD_STATES, type NodeRecord, type UploadRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import { launchResult } from './launch-result.js';
import type { BuildOutcome, LaunchOutcome, MetricsSink, UploadOutcome } from './outcomes.js';
import { ValidationOutcomeTracker, type ValidationOutcome } from './validation-outcomes.js';

/** What the reporter needs. */
export interface StatsdReporterDeps {
  client: StatsdClient;
  store: Store;
  config: () => Config;
  log: Logger;
  /** Between two rounds of node gauges (default 10 000 ms). */
  gaugeIntervalMs?: number;
}

const seg = statsdSegment;

/** Node gauges of one round: every state of every known provider and label, 0 included. */
export function nodeGauges(config: Config, nodes: readonly NodeRecord[]): Map<string, number> {
  const out = new Map<string, number>();
  const providers = new Set([...config.providers.map((p) => p.name), ...nodes.map((n) => n.provider)]);
  const labels = new Set([...config.labels.map((l) => l.name), ...nodes.flatMap((n) => n.labels)]);
  for (const state of NODE_STATES) {
    out.set(`nodepool.nodes.${state}`, 0);
    for (const p of providers) out.set(`nodepool.provider.${seg(p)}.nodes.${state}`, 0);
    for (const l of labels) out.set(`nodepool.label.${seg(l)}.nodes.${state}`, 0);
  }
  const add = (key: string): void => { out.set(key, (out.get(key) ?? 0) + 1); };
  for (const n of nodes) {
    add(`nodepool.nodes.${n.state}`);
    add(`nodepool.provider.${seg(n.provider)}.nodes.${n.state}`);
    for (const l of n.labels) add(`nodepool.label.${seg(l)}.nodes.${n.state}`);
  }
  for (const p of config.providers) {
    const pools = providerPools(p);
    if (pools.length) out.set(`nodepool.provider.${seg(p.name)}.max_servers`, Math.min(Number.MAX_SAFE_INTEGER, pools.reduce((s, pool) => s + pool.maxServers, 0)));
  }
  return out;
}

/** Upload gauges of one round: every upload state, overall and per known provider, 0 included. */
export function uploadGauges(config: Config, uploads: readonly UploadRecord[]): Map<string, number> {
  const out = new Map<string, number>();
  const providers = new Set([...config.providers.filter((p) => imageTargets(p).length > 0).map((p) => p.name), ...uploads.map((u) => u.provider)]);
  for (const state of UPLOAD_STATES) {
    out.set(`nodepool.uploads.${state}`, 0);
    for (const p of providers) out.set(`nodepool.provider.${seg(p)}.uploads.${state}`, 0);
  }
  const add = (key: string): void => { out.set(key, (out.get(key) ?? 0) + 1); };
  for (const u of uploads) {
    add(`nodepool.uploads.${u.state}`);
    add(`nodepool.provider.${seg(u.provider)}.uploads.${u.state}`);
  }
  return out;
}

/** The counter a validation outcome is counted under. */
export function validationKey(o: ValidationOutcome): string {
  return `nodepool.image_validation.${seg(o.diskimage)}.${seg(o.provider)}.${o.result}`;
}

/** The keys a launch is counted under (Nodepool's: all, per provider, per provider and AZ, per requestor). */
export function launchKeys(o: LaunchOutcome): string[] {
  const result = launchResult(o.result);
  const provider = seg(o.provider);
  return [
    `nodepool.launch.${result}`,
    `nodepool.launch.provider.${provider}.${result}`,
    ...(o.az ? [`nodepool.launch.provider.${provider}.${seg(o.az)}.${result}`] : []),
    `nodepool.launch.requestor.${seg(o.requestor).replace(/\./g, '_')}.${result}`,
  ];
}

export class StatsdReporter implements MetricsSink {
  private timer: NodeJS.Timeout | undefined;
  private gauging: Promise<void> | undefined;
  private readonly validations = new ValidationOutcomeTracker(Date.now());

  constructor(private readonly deps: StatsdReporterDeps) {}

  /** Sends node gauges now and every `gaugeIntervalMs`. */
  start(): void {
    if (this.timer) return;
    void this.sendGauges();
    this.timer = setInterval(() => void this.sendGauges(), this.deps.gaugeIntervalMs ?? 10_000);
    this.timer.unref();
  }

  /** Stops the gauges and closes the client. Idempotent. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.gauging;
    this.deps.client.close();
  }

  buildFinished(o: BuildOutcome): void {
    const key = `nodepool.dib_image_build.${seg(o.diskimage)}`;
    const c = this.deps.client;
    c.timing(`${key}.status.duration`, o.durationMs);
    c.gauge(`${key}.status.rc`, o.result === 'ready' ? 0 : 1);
    c.gauge(`${key}.status.last_build`, Math.floor(o.finished / 1000));
    for (const f of o.files) c.gauge(`${key}.${seg(f.format)}.size`, f.size);
  }

  uploadFinished(o: UploadOutcome): void {
    if (o.result !== 'ready') return;
    const key = `nodepool.image_update.${seg(o.diskimage)}.${seg(o.provider)}`;
    this.deps.client.timing(key, o.durationMs);
    this.deps.client.incr(key);
  }

  launchFinished(o: LaunchOutcome): void {
    for (const key of launchKeys(o)) {
      this.deps.client.timing(key, o.durationMs);
      this.deps.client.incr(key);
    }
  }

  leaked(provider: string, resource: string, count: number): void {
    this.deps.client.incr(`nodepool.provider.${seg(provider)}.leaked.${seg(resource)}s`, count);
  }

  private sendGauges(): Promise<void> {
    this.gauging ??= (async () => {
      try {
        const nodes = await this.deps.store.listNodes();
        for (const [key, value] of nodeGauges(this.deps.config(), nodes)) this.deps.client.gauge(key, value);
      } catch (err) {
        this.deps.log.warn('statsd: could not read the nodes for the gauges', { error: coerceError(err).message });
      }
      try {
        const config = this.deps.config();
        const uploads = await this.deps.store.listUploads();
        for (const [key, value] of uploadGauges(config, uploads)) this.deps.client.gauge(key, value);
        const validates = (provider: string, diskimage: string): boolean =>
          config.providers.some((p) => p.name === provider && imageTargets(p).some((t) => t.diskimage === diskimage && t.validate !== null));
        for (const o of this.validations.observe(uploads, validates)) this.deps.client.incr(validationKey(o));
      } catch (err) {
        this.deps.log.warn('statsd: could not read the uploads for the gauges', { error: coerceError(err).message });
      }
    })().finally(() => { this.gauging = undefined; });
    return this.gauging;
  }
}
