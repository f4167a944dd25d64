/**
 * The server's Prometheus metrics (prom-client, prefix `nodepool_`). Gauges are read from the
 * store and the config at scrape time (one store snapshot per render, shared by their collect
 * callbacks, and one render shared by concurrent scrapes and reused for a second); counters
 * and histograms count outcomes as they happen (outcomes.ts), except
 * validation outcomes, which are counted from the scrape's upload records
 * (validation-outcomes.ts). Every combination the config names is reported, at 0 when empty,
 * so series do not vanish.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Config } from '../../lib/config/schema.js';
import { imageTargets, providerPools } from '../../lib/drivers/config-registry.js';
import { METRICS_CONTENT_TYPE, renderMetrics } from '../../lib/metrics/process-metrics.js';
import { SharedRender } from '../../lib/metrics/shared-render.js';
import type { LoopHealth } from '../../lib/periodic-loop.js';
import {
  BUILD_STATES, NODE_STATES, REQUEST_STATES, UPLOAD_STATES, type BuildRecord, type LauncherRecord, type NodeRecord, type NodeRequestRecord, type PinRecord,
  type RevocationRecord, type UploadRecord,
} from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import { WAIT_REASON_CODES } from '../../lib/fleet/placement.js';
import { breakerSettings, waitCodes, waitReasons } from '../../lib/fleet/standing.js';
import { launchResult } from './launch-result.js';
import type { BuildOutcome, LaunchOutcome, MetricsSink, UploadOutcome } from './outcomes.js';
import { registerRolloutMetrics } from './rollout-metrics.js';
import { ValidationOutcomeTracker } from './validation-outcomes.js';

/** What the gauges read. */
export interface PrometheusMetricsDeps {
  store: Store;
  config: () => Config;
  loops: () => LoopHealth[];
  /** The providers' own limits (cloud quotas), read at scrape time. */
  resourceLimits?: () => Promise<Array<{ provider: string; resource: string; limit: number }>>;
  /** How long one exposition answers later scrapes (default 1000 ms; see SharedRender). */
  reuseMs?: number;
}

interface Snapshot {
  config: Config;
  builds: BuildRecord[];
  uploads: UploadRecord[];
  nodes: NodeRecord[];
  requests: NodeRequestRecord[];
  pins: PinRecord[];
  revocations: RevocationRecord[];
  loops: LoopHealth[];
  limits: Array<{ provider: string; resource: string; limit: number }>;
  launchers: LauncherRecord[];
  /** Epoch ms the snapshot was read. */
  at: number;
}

/** Build durations: minutes to the 8 h default build-timeout. */
const BUILD_BUCKETS = [10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14_400, 28_800];
/** Upload durations: seconds to the 1 h default image-upload-timeout and past it. */
const UPLOAD_BUCKETS = [1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200];
/** Launch durations: a boot takes tens of seconds to the launch-timeout. */
const LAUNCH_BUCKETS = [1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

/** Counts of `key(item)` over `items`, starting from every key in `zero` at 0. */
function tally<T>(items: readonly T[], key: (t: T) => string[], zero: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const k of zero) counts.set(k, 0);
  for (const item of items) for (const k of key(item)) counts.set(k, (counts.get(k) ?? 0) + 1);
  return counts;
}

const SEP = '\u0000';
const split = (k: string): string[] => k.split(SEP);

export class PrometheusMetrics implements MetricsSink {
  readonly registry = new Registry();
  readonly contentType = METRICS_CONTENT_TYPE;
  private scrape: Promise<Snapshot> | undefined;
  private readonly buildDuration: Histogram<'diskimage' | 'result'>;
  private readonly uploadDuration: Histogram<'provider' | 'diskimage' | 'result'>;
  private readonly uploadBytes: Counter<'provider'>;
  private readonly launches: Counter<'provider' | 'result'>;
  private readonly launchDuration: Histogram<'provider' | 'result'>;
  private readonly leakedTotal: Counter<'provider' | 'resource'>;
  private readonly validations = new ValidationOutcomeTracker(Date.now());
  private readonly shared: SharedRender;

  constructor(private readonly deps: PrometheusMetricsDeps) {
    this.shared = new SharedRender({ render: () => this.renderNow(), ...(deps.reuseMs === undefined ? {} : { ttlMs: deps.reuseMs }) });
    const registers = [this.registry];
    this.gauges();
    registerRolloutMetrics(this.registry, () => this.snapshot());
    this.buildDuration = new Histogram({
      name: 'nodepool_build_duration_seconds', help: 'Time from a build record to its end, by diskimage and result (ready|failed)',
      labelNames: ['diskimage', 'result'], buckets: BUILD_BUCKETS, registers,
    });
    this.uploadDuration = new Histogram({
      name: 'nodepool_upload_duration_seconds', help: 'Time from an upload record to its end, by provider, diskimage and result (ready|failed)',
      labelNames: ['provider', 'diskimage', 'result'], buckets: UPLOAD_BUCKETS, registers,
    });
    this.uploadBytes = new Counter({
      name: 'nodepool_upload_bytes_total', help: 'Bytes of image files uploaded, by provider (uploads in a format the builder converted to are not counted)',
      labelNames: ['provider'], registers,
    });
    this.launches = new Counter({
      name: 'nodepool_launch_total', help: "Node launches by provider and result (Nodepool's: ready, error.quota, error.unknown)",
      labelNames: ['provider', 'result'], registers,
    });
    this.launchDuration = new Histogram({
      name: 'nodepool_launch_duration_seconds', help: 'Time from a node record to its launch outcome, by provider and result',
      labelNames: ['provider', 'result'], buckets: LAUNCH_BUCKETS, registers,
    });
    const snapshot = (): Promise<Snapshot> => this.snapshot();
    const validations = this.validations;
    new Counter<'provider' | 'diskimage' | 'result'>({
      name: 'nodepool_upload_validations_total',
      help: 'Validations of new uploads that ended (result passed|failed), by provider and diskimage; counted from the upload records at scrape time',
      labelNames: ['provider', 'diskimage', 'result'], registers,
      async collect() {
        const s = await snapshot();
        const targets = s.config.providers.flatMap((p) => imageTargets(p).filter((t) => t.validate !== null).map((t) => ({ provider: p.name, diskimage: t.diskimage })));
        for (const t of targets) for (const result of ['passed', 'failed']) this.inc({ ...t, result }, 0);
        const validates = (provider: string, diskimage: string): boolean => targets.some((t) => t.provider === provider && t.diskimage === diskimage);
        for (const o of validations.observe(s.uploads, validates)) this.inc({ provider: o.provider, diskimage: o.diskimage, result: o.result });
      },
    });
    this.leakedTotal = new Counter({
      name: 'nodepool_leaked_total', help: 'Leaked cloud resources deleted, by provider and resource (image, server)',
      labelNames: ['provider', 'resource'], registers,
    });
  }

  /**
   * The exposition, process metrics included. Concurrent scrapes share one render (one store
   * snapshot), and a finished one answers for a second: a scrape storm cannot stall the server.
   */
  render(): Promise<string> {
    return this.shared.get();
  }

  private async renderNow(): Promise<string> {
    this.scrape = this.readSnapshot();
    try {
      return await renderMetrics(this.registry);
    } finally {
      this.scrape = undefined;
    }
  }

  buildFinished(o: BuildOutcome): void {
    this.buildDuration.observe({ diskimage: o.diskimage, result: o.result }, o.durationMs / 1000);
  }

  uploadFinished(o: UploadOutcome): void {
    this.uploadDuration.observe({ provider: o.provider, diskimage: o.diskimage, result: o.result }, o.durationMs / 1000);
    if (o.result === 'ready' && o.bytes !== null) this.uploadBytes.inc({ provider: o.provider }, o.bytes);
  }

  launchFinished(o: LaunchOutcome): void {
    const labels = { provider: o.provider, result: launchResult(o.result) };
    this.launches.inc(labels);
    this.launchDuration.observe(labels, o.durationMs / 1000);
  }

  leaked(provider: string, resource: string, count: number): void {
    this.leakedTotal.inc({ provider, resource }, count);
  }

  private async readSnapshot(): Promise<Snapshot> {
    const { store } = this.deps;
    const [builds, uploads, nodes, requests, pins, revocations, limits, launchers] = await Promise.all([
      store.listBuilds(), store.listUploads(), store.listNodes(), store.listRequests(), store.listPins(), store.listRevocations(),
      this.deps.resourceLimits?.() ?? [], store.listLaunchers(),
    ]);
    return { config: this.deps.config(), builds, uploads, nodes, requests, pins, revocations, loops: this.deps.loops(), limits, launchers, at: Date.now() };
  }

  private snapshot(): Promise<Snapshot> {
    return this.scrape ?? this.readSnapshot();
  }

  /** The scrape-time gauges. */
  private gauges(): void {
    const registers = [this.registry];
    const gauge = <L extends string>(name: string, help: string, labelNames: L[], fill: (g: Gauge<L>, s: Snapshot) => void): void => {
      const snapshot = (): Promise<Snapshot> => this.snapshot();
      new Gauge<L>({
        name, help, labelNames, registers,
        async collect() {
          const s = await snapshot();
          this.reset();
          fill(this, s);
        },
      });
    };
    gauge('nodepool_image_builds', 'Build records by diskimage and state', ['diskimage', 'state'], (g, s) => {
      const zero = s.config.diskimages.flatMap((d) => BUILD_STATES.map((st) => [d.name, st].join(SEP)));
      for (const [k, n] of tally(s.builds, (b) => [[b.diskimage, b.state].join(SEP)], zero)) {
        const [diskimage = '', state = ''] = split(k);
        g.set({ diskimage, state }, n);
      }
    });
    gauge('nodepool_image_uploads', 'Upload records by provider, diskimage and state', ['provider', 'diskimage', 'state'], (g, s) => {
      const zero = s.config.providers.flatMap((p) => imageTargets(p).flatMap((t) => UPLOAD_STATES.map((st) => [p.name, t.diskimage, st].join(SEP))));
      for (const [k, n] of tally(s.uploads, (u) => [[u.provider, u.diskimage, u.state].join(SEP)], zero)) {
        const [provider = '', diskimage = '', state = ''] = split(k);
        g.set({ provider, diskimage, state }, n);
      }
    });
    gauge('nodepool_nodes', 'Nodes by provider, label and state (a node with several labels counts under each)', ['provider', 'label', 'state'], (g, s) => {
      const zero = s.config.providers.flatMap((p) => [...new Set(providerPools(p).flatMap((pool) => pool.labels))]
        .flatMap((label) => NODE_STATES.map((st) => [p.name, label, st].join(SEP))));
      for (const [k, n] of tally(s.nodes, (node) => node.labels.map((l) => [node.provider, l, node.state].join(SEP)), zero)) {
        const [provider = '', label = '', state = ''] = split(k);
        g.set({ provider, label, state }, n);
      }
    });
    gauge('nodepool_requests', 'Node requests by state', ['state'], (g, s) => {
      for (const [state, n] of tally(s.requests, (r) => [r.state], REQUEST_STATES)) g.set({ state }, n);
    });
    gauge('nodepool_requests_waiting', 'Requests no pool can serve now, by why (a request waiting for several reasons counts under each; issue 35 §4)', ['reason'], (g, s) => {
      const settings = breakerSettings(s.config.launcher.breaker);
      for (const [reason, n] of tally(s.requests, (r) => waitCodes(waitReasons(r, s.launchers, s.at, settings)), WAIT_REASON_CODES)) g.set({ reason }, n);
    });
    gauge('nodepool_pool_breaker_open', "Whether a registered pool's circuit breaker is open (1; a probe in flight counts as open) or closed (0)", ['provider', 'pool'], (g, s) => {
      for (const l of s.launchers) g.set({ provider: l.provider, pool: l.pool }, (l.standing?.breaker.state ?? 'closed') === 'closed' ? 0 : 1);
    });
    gauge('nodepool_pool_headroom', "A registered pool's free share (0 to 1) of max-servers, as its launcher last published it (placement reads it)", ['provider', 'pool'], (g, s) => {
      for (const l of s.launchers) if (l.standing) g.set({ provider: l.provider, pool: l.pool }, l.standing.headroom);
    });
    gauge('nodepool_provider_quota', "A provider's limits: max-servers (the sum of its pools') and the cloud's own quota (cores, ram in MiB, instances)", ['provider', 'resource'], (g, s) => {
      for (const p of s.config.providers) {
        const pools = providerPools(p);
        if (pools.length === 0) continue;
        const max = pools.reduce((n, pool) => n + pool.maxServers, 0);
        g.set({ provider: p.name, resource: 'max-servers' }, max >= Number.MAX_SAFE_INTEGER ? Infinity : max);
      }
      for (const l of s.limits) g.set({ provider: l.provider, resource: l.resource }, l.limit);
    });
    gauge('nodepool_loop_failures', "Consecutive failed passes of each of the server's loops (0 once a pass succeeds)", ['loop'], (g, s) => {
      for (const l of s.loops) g.set({ loop: l.name }, l.consecutiveFailures);
    });
    gauge('nodepool_loop_pass_running_seconds', "How long each loop's pass in progress has run (0 between passes); alert when it passes the loop's bound", ['loop'], (g, s) => {
      for (const l of s.loops) g.set({ loop: l.name }, l.runningSince ? Math.max(0, s.at - l.runningSince) / 1000 : 0);
    });
    gauge('nodepool_loop_last_success_timestamp_seconds', "When each loop's last successful pass ended (epoch seconds; absent before the first)", ['loop'], (g, s) => {
      for (const l of s.loops) if (l.lastSuccess !== null) g.set({ loop: l.name }, l.lastSuccess / 1000);
    });
  }
}
