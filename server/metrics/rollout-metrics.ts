/**
 * Image rollout metrics (issue 24), read from the store at scrape time with the other gauges
 * (prometheus-metrics.ts shares its snapshot): each pin, each upload's rollout state, and the
 * launches counted on each upload. The launch counts are the store's (every launcher on every
 * host adds to them, and they survive restarts), so the counter's collect sets each series to
 * the stored total instead of counting what this process saw.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Config } from '../../lib/config/schema.js';
import { ROLLOUT_STATES, type PinRecord, type RevocationRecord, type UploadRecord } from '../../lib/store/models.js';
import { settingsFor } from '../../lib/status/list-data.js';
import { ALL_PROVIDERS, uploadLaunches, uploadRollout } from '../../lib/status/rollout-status.js';

/** What the rollout metrics read from one scrape's snapshot. */
export interface RolloutSnapshot {
  config: Config;
  uploads: readonly UploadRecord[];
  pins: readonly PinRecord[];
  revocations: readonly RevocationRecord[];
  /** Epoch ms the snapshot was read. */
  at: number;
}

/**
 * Registers in `registry`: `nodepool_image_pinned{diskimage,provider,build}` (1 per pin; provider
 * `all` for a diskimage-wide pin), `nodepool_upload_rollout{diskimage,provider,upload,state}` (1
 * for the state a ready upload, or an upload of a revoked build, is in and 0 for the others), and
 * the counter `nodepool_upload_launches_total{upload,result}` (result success|failure: the
 * store's counts).
 */
export function registerRolloutMetrics(registry: Registry, snapshot: () => Promise<RolloutSnapshot>): void {
  const registers = [registry];
  new Gauge<'diskimage' | 'provider' | 'build'>({
    name: 'nodepool_image_pinned', help: "Pins of a diskimage's launches to a build (1 per pin; provider all for a diskimage-wide pin)",
    labelNames: ['diskimage', 'provider', 'build'], registers,
    async collect() {
      const s = await snapshot();
      this.reset();
      for (const p of s.pins) this.set({ diskimage: p.diskimage, provider: p.provider ?? ALL_PROVIDERS, build: p.buildId }, 1);
    },
  });
  new Gauge<'diskimage' | 'provider' | 'upload' | 'state'>({
    name: 'nodepool_upload_rollout',
    help: 'Where each ready upload (and each upload of a revoked build) stands in its rollout: 1 for its state (canary|promoted|revoked), 0 for the others',
    labelNames: ['diskimage', 'provider', 'upload', 'state'], registers,
    async collect() {
      const s = await snapshot();
      this.reset();
      const input = { revocations: s.revocations, settingsFor: settingsFor(s.config), now: s.at };
      for (const u of s.uploads) {
        const phase = uploadRollout(u, input);
        if (!phase) continue;
        for (const state of ROLLOUT_STATES) this.set({ diskimage: u.diskimage, provider: u.provider, upload: u.id, state }, state === phase.state ? 1 : 0);
      }
    },
  });
  new Counter<'upload' | 'result'>({
    name: 'nodepool_upload_launches_total',
    help: 'Launches booted from each upload by result (success|failure), as every launcher counted them in the store',
    labelNames: ['upload', 'result'], registers,
    async collect() {
      const s = await snapshot();
      // The totals are the store's: start from none and add each stored count once.
      this.reset();
      for (const u of s.uploads) {
        const { launches, launchFailures } = uploadLaunches(u);
        this.inc({ upload: u.id, result: 'success' }, launches);
        this.inc({ upload: u.id, result: 'failure' }, launchFailures);
      }
    },
  });
}
