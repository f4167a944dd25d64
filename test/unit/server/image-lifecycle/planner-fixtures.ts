/**
 * Record factories and a table runner for the planner's unit tests: each row is a situation
 * (config, records, what gearmand advertises, what is in flight) and the exact actions the
 * planner must decide, plus the status fields it must report.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../../lib/config/load.js';
import type { Config } from '../../../../lib/config/schema.js';
import type { BuildRecord, BuildRequest, BuildState, PauseRecord, PinRecord, RevocationRecord, UploadRecord, UploadState } from '../../../../lib/store/models.js';
import type { Action, Plan, PlannerSnapshot } from '../../../../server/image-lifecycle/actions.js';
import { plan } from '../../../../server/image-lifecycle/planner.js';
import type { DiskimageStatus, UploadTargetStatus } from '../../../../lib/status/lifecycle-status.js';

export const NOW = Date.UTC(2024, 0, 1);
/** Epoch ms `s` seconds before {@link NOW} (negative: after). */
export const ago = (s: number): number => NOW - s * 1000;

/** `<diskimage>-<10 digits>`. */
export const bid = (diskimage: string, seq: number): string => `${diskimage}-${String(seq).padStart(10, '0')}`;
export const uid = (n: number): string => String(n).padStart(10, '0');

/** The default builder's client id. */
export const B1 = 'h1:B1';

interface ConfigOptions {
  diskimages?: object[];
  providers?: object[];
  /** `image-lifecycle` keys laid over the defaults. */
  lifecycle?: Record<string, number | boolean>;
}

/**
 * A loaded config. Default: diskimage `a` (rebuild-age 1 day, build-timeout 3600 s) listed by
 * the openstack provider `p1`; interval 10 s, retry-delay 60 s, max 3600 s, grace 300 s,
 * config-removal-grace 600 s (the default).
 */
export function config(o: ConfigOptions = {}): Config {
  // stray-grace and delete-unknown keep their defaults (3600 s, false) unless a row sets them.
  return parseConfig(JSON.stringify({
    diskimages: o.diskimages ?? [{ name: 'a', 'rebuild-age': 86400, 'build-timeout': 3600 }],
    providers: o.providers ?? [{ name: 'p1', cloud: 'c', diskimages: [{ name: 'a' }] }],
    'image-lifecycle': { interval: 10, 'retry-delay': 60, 'max-retry-delay': 3600, 'build-timeout-grace': 300, ...o.lifecycle },
  }), 'nodepool.yaml');
}
const DEFAULT_CONFIG = config();

/** A build; ready builds finished an hour ago, building ones started a minute ago. */
export function build(diskimage: string, seq: number, state: BuildState = 'ready', over: Partial<BuildRecord> = {}): BuildRecord {
  const stateTime = over.stateTime ?? (state === 'building' ? ago(60) : ago(3600));
  return {
    id: bid(diskimage, seq), diskimage, state, stateTime, created: stateTime - 1_800_000,
    builderHostname: 'h1', builderId: 'B1', formats: ['qcow2'], files: [],
    reason: state === 'failed' ? 'dib exited 1' : null, progress: null, ...over,
  };
}

/** Upload `n` of build `<diskimage>-<seq>` to `provider`, ready half an hour ago. */
export function upload(n: number, diskimage: string, seq: number, provider = 'p1', state: UploadState = 'ready', over: Partial<UploadRecord> = {}): UploadRecord {
  const stateTime = over.stateTime ?? ago(1800);
  return {
    id: uid(n), buildId: bid(diskimage, seq), diskimage, provider, imageName: diskimage, state, stateTime, created: stateTime,
    externalId: state === 'ready' ? `ext-${n}` : null, externalName: null, format: 'qcow2',
    reason: state === 'failed' ? 'glance said no' : null, progress: null, ...over,
  };
}

/** A pin of build `<diskimage>-<seq>` (diskimage-wide when `provider` is null), an hour old. */
export function pin(diskimage: string, seq: number, provider: string | null = null): PinRecord {
  return { diskimage, provider, buildId: bid(diskimage, seq), since: ago(3600), reason: 'known good' };
}

/** A revocation of build `<diskimage>-<seq>`, ten minutes old. */
export function revocation(diskimage: string, seq: number, reason: string | null = 'kernel panics on boot'): RevocationRecord {
  return { diskimage, buildId: bid(diskimage, seq), since: ago(600), reason };
}

/** One situation of a table. */
export interface Situation {
  config?: Config;
  now?: number;
  builds?: BuildRecord[];
  uploads?: UploadRecord[];
  requests?: BuildRequest[];
  pauses?: PauseRecord[];
  pins?: PinRecord[];
  revocations?: RevocationRecord[];
  /**
   * `null`: gearmand's admin did not answer. Otherwise entries laid over the default, where
   * `h1:B1` registers `image-build:<d>` for every configured diskimage and
   * `image-upload:<id>` for every ready build (`[]` unregisters).
   */
  gearman?: Record<string, string[]> | null;
  /** Build id → seconds ago since its image-upload has been unregistered. */
  absent?: Record<string, number>;
  /** Config removal key → seconds ago since it has been missing (the previous plan's removals). */
  removed?: Record<string, number>;
  /** Advertised image id → seconds ago since the store has had no record of it (stray grace). */
  unknown?: Record<string, number>;
  /** Unknown ids first seen while the store had no builds. */
  suspect?: string[];
  inFlight?: { builds?: string[]; uploads?: string[]; buildDeletes?: string[]; uploadDeletes?: string[] };
}

/** A snapshot with every record frozen (the planner must not write to it). */
export function snapshot(s: Situation): PlannerSnapshot {
  const cfg = s.config ?? DEFAULT_CONFIG;
  const builds = (s.builds ?? []).map((b) => Object.freeze({ ...b }));
  let registered: Map<string, string[]> | null = null;
  if (s.gearman !== null) {
    registered = new Map();
    for (const d of cfg.diskimages) registered.set(`image-build:${d.name}`, [B1]);
    for (const b of builds) if (b.state === 'ready') registered.set(`image-upload:${b.id}`, [B1]);
    for (const [name, ids] of Object.entries(s.gearman ?? {})) registered.set(name, ids);
  }
  const inFlight = s.inFlight ?? {};
  return {
    now: s.now ?? NOW,
    config: cfg,
    builds,
    uploads: (s.uploads ?? []).map((u) => Object.freeze({ ...u })),
    buildRequests: (s.requests ?? []).map((r) => Object.freeze({ ...r })),
    pauses: (s.pauses ?? []).map((p) => Object.freeze({ ...p })),
    pins: (s.pins ?? []).map((p) => Object.freeze({ ...p })),
    revocations: (s.revocations ?? []).map((r) => Object.freeze({ ...r })),
    registered,
    absentSince: new Map(Object.entries(s.absent ?? {}).map(([id, sec]) => [id, ago(sec)])),
    removedSince: new Map(Object.entries(s.removed ?? {}).map(([key, sec]) => [key, ago(sec)])),
    unknownSince: new Map(Object.entries(s.unknown ?? {}).map(([id, sec]) => [id, ago(sec)])),
    unknownSuspect: new Set(s.suspect),
    inFlight: {
      builds: new Set(inFlight.builds), uploads: new Set(inFlight.uploads),
      buildDeletes: new Set(inFlight.buildDeletes), uploadDeletes: new Set(inFlight.uploadDeletes),
    },
  };
}

/** A row: a situation, the exact actions, and status fields to check. */
export interface Row extends Situation {
  name: string;
  actions: Action[];
  /** Fields of diskimage `a`'s status (or of `diskimageName`'s). */
  diskimage?: Partial<DiskimageStatus>;
  diskimageName?: string;
  /** Fields of the (a, p1) target's status. */
  target?: Partial<UploadTargetStatus>;
  /** What the plan's `held` must say, one pattern per refusal (default: nothing held). */
  held?: RegExp[];
}

/** The record an action is about; start-* create new records, so they have none. */
function recordOf(a: Action): string | undefined {
  switch (a.type) {
    case 'start-build': case 'start-upload': return undefined;
    case 'resume-build': case 'fail-build': case 'delete-build': case 'mark-lost': case 'mark-found': case 'delete-formats': return `build:${a.buildId}`;
    case 'delete-stray': return `build:${a.imageId}`;
    case 'resume-upload': case 'fail-upload': case 'delete-upload': case 'fail-validation': case 'skip-validation': return `upload:${a.uploadId}`;
    case 'clear-request': return `request:${a.diskimage}:${a.requested}`;
    case 'forget-revocation': return `revocation:${a.buildId}`;
  }
}

/** Plans a row and checks the invariants every plan must hold. */
export function planRow(s: Situation): Plan {
  const snap = snapshot(s);
  const p = plan(snap);
  const records = p.actions.map(recordOf).filter((r) => r !== undefined);
  assert.equal(new Set(records).size, records.length, `one action per record: ${JSON.stringify(p.actions)}`);
  assert.deepEqual(plan(snap), p, 'the same snapshot gives the same plan');
  return p;
}

/** Runs a table: one test per row, named by the behaviour. */
export function table(title: string, rows: Row[]): void {
  describe(title, () => {
    for (const row of rows) {
      it(row.name, () => {
        const p = planRow(row);
        assert.deepEqual(p.actions, row.actions);
        assert.equal(p.held.length, (row.held ?? []).length, `held: ${JSON.stringify(p.held)}`);
        for (const [i, re] of (row.held ?? []).entries()) assert.match(p.held[i] ?? '', re);
        if (row.diskimage) {
          const name = row.diskimageName ?? 'a';
          const st = p.diskimages.find((d) => d.diskimage === name);
          assert.ok(st, `status of diskimage ${name}`);
          for (const [k, v] of Object.entries(row.diskimage)) assert.deepEqual(st[k as keyof DiskimageStatus], v, `diskimage status ${k}`);
        }
        if (row.target) {
          const st = p.targets.find((t) => t.diskimage === 'a' && t.provider === 'p1');
          assert.ok(st, 'status of target (a, p1)');
          for (const [k, v] of Object.entries(row.target)) assert.deepEqual(st[k as keyof UploadTargetStatus], v, `target status ${k}`);
        }
      });
    }
  });
}
