/**
 * Keeps `labels[].min-ready` topped up: reaps the launcher's own finished min-ready requests
 * (their nodes become generic ready stock) and creates one-node requests (reuse off) for
 * labels short of ready nodes. One process at a time does this, under the store lock
 * `min-ready`, so split servers do not double the requests. A label's min-ready is its
 * `min-ready-schedule`'s value at the launcher's clock (lib/config/min-ready-schedule.ts), else
 * its plain `min-ready`; ready nodes above a value that went down are left alone (Nodepool's way).
 */
import { minReadyAt } from '../../lib/config/min-ready-schedule.js';
import type { Config, LabelConfig } from '../../lib/config/schema.js';
import type { Provider, PoolInfo } from '../../lib/drivers/contract/driver.js';
import type { Logger } from '../../lib/log.js';
import type { Store } from '../../lib/store/store.js';
import { MIN_READY_REQUESTOR, minReadyNeeds } from './decisions.js';

/** What the top-up needs. */
export interface MinReadyDeps {
  store: Store;
  log: Logger;
  config: Config;
  /** This process's providers and their pools. */
  providers: ReadonlyArray<{ provider: Provider; pools: readonly PoolInfo[] }>;
  sessionId: string;
  /** Epoch ms; the schedule's periods are read at it (default Date.now). */
  clock?: () => number;
}

/** The value of each scheduled label and how long it holds, so a pass reads the cron only at a change. */
const periods = new WeakMap<LabelConfig, { from: number; until: number; minReady: number }>();

/** The label's min-ready at `now`; logs a value the schedule changed. */
function minReadyNow(label: LabelConfig, now: number, log: Logger): number {
  if (label.minReadySchedule.length === 0) return label.minReady;
  const known = periods.get(label);
  if (known && known.from <= now && now < known.until) return known.minReady;
  const r = minReadyAt(label, now);
  periods.set(label, { from: now, until: r.holdsUntil, minReady: r.minReady });
  if (known?.minReady !== r.minReady) {
    log.info('min-ready by schedule', {
      label: label.name, minReady: r.minReady, source: r.source,
      nextChange: r.nextChange && { at: new Date(r.nextChange.at).toISOString(), minReady: r.nextChange.minReady },
    });
  }
  return r.minReady;
}

/** One top-up; returns how many requests it created. */
export async function topUpMinReady(deps: MinReadyDeps): Promise<number> {
  const { store, log, config, sessionId } = deps;
  if (!config.labels.some((l) => l.minReady > 0 || l.minReadySchedule.length > 0)) return 0;
  if (!await store.tryLock('min-ready', sessionId)) return 0;
  try {
    const own = await store.listRequests({ requestor: MIN_READY_REQUESTOR });
    for (const r of own) {
      if (r.state === 'fulfilled') {
        for (const id of r.nodes) {
          const n = await store.getNode(id);
          if (n?.allocatedTo === r.id) await store.updateNode(id, { allocatedTo: null });
        }
        await store.deleteRequest(r.id);
      } else if (r.state === 'failed') {
        log.warn('min-ready request failed', { request: r.id, labels: r.labels, reason: r.reason });
        await store.deleteRequest(r.id);
      }
    }
    const now = (deps.clock ?? Date.now)();
    const labels = config.labels.map((l) => ({ name: l.name, minReady: minReadyNow(l, now, log) }));
    const servable = new Map<string, boolean>();
    for (const l of labels.filter((x) => x.minReady > 0)) servable.set(l.name, await canServe(deps, l.name));
    const needs = minReadyNeeds(labels, await store.listNodes({ states: ['ready'] }),
      own.filter((r) => r.state === 'requested' || r.state === 'pending'), (l) => servable.get(l) === true);
    let created = 0;
    for (const [label, count] of needs) {
      for (let i = 0; i < count; i++) {
        await store.createRequest({ labels: [label], requestor: MIN_READY_REQUESTOR, reuse: false });
        created += 1;
      }
      log.info('min-ready requests created', { label, count });
    }
    return created;
  } finally {
    await store.unlock('min-ready', sessionId);
  }
}

/** A local pool that launches nodes serves the label and its image is there. */
async function canServe(deps: MinReadyDeps, label: string): Promise<boolean> {
  for (const { provider, pools } of deps.providers) {
    for (const pool of pools) {
      if (!pool.labels.includes(label) || pool.maxServers <= 0) continue;
      const probe = provider.getRequestHandler(pool.name, {
        id: 'min-ready-probe', priority: 100, state: 'requested', stateTime: 0, created: 0, labels: [label],
        requestor: MIN_READY_REQUESTOR, reuse: false, provider: null, declinedBy: [], nodes: [], reason: null, requestorSession: null,
      });
      if (probe.canLaunch && await provider.labelReady(label)) return true;
    }
  }
  return false;
}
