/**
 * The rollout policy interface (issue 24, issue 32 §2): what every rollout policy (an
 * operator's revocation, a pin, a canary's share and promotion, a promotion window) may say
 * about an upload's phase and about which upload a launch boots, and the `rollout:` keys it
 * adds. The upload phase (upload-phase.ts) and the boot choice (boot-upload.ts) ask the
 * configured policies (policies.ts) and combine their answers; a new policy is a new file and
 * an entry there. Pure: policies decide from the records and settings they are given.
 */
import type { Field, object } from '../config/schema-kit.js';
import type { PinRecord, RevocationRecord, RolloutState, UploadRecord } from '../store/models.js';

/**
 * A provider diskimage's (or diskimage's) `rollout:` settings, as parsed. A policy that adds
 * keys adds its fields here by declaration merging in its own file.
 */
export interface RolloutSettings {
  /** Percent (0–100) of launches the new upload serves while it is a canary. */
  canary: number;
  /** Promoted once it had this many successful launches and is at least this old (ms). */
  promoteAfter: { launches: number; ageMs: number };
  /** Revoked automatically after this many failed launches (0: never). */
  abortOn: { launchFailures: number };
}

/** An upload's rollout state as every launcher reads it now. */
export interface UploadPhase {
  state: RolloutState;
  /** Since when (epoch ms): the decision's time, or the upload's readiness for a derived canary. */
  since: number;
  reason: string | null;
  /** True when no decision is written for it yet and the phase follows from counts and age. */
  derived: boolean;
}

/** What the store and config say about rollout, read once for a choice. */
export interface RolloutView {
  pins: readonly PinRecord[];
  revocations: readonly RevocationRecord[];
  /** The provider diskimage's `rollout:` settings, if it has any. */
  settings?: RolloutSettings;
  now: number;
}

/** A canary (an upload with settings and no written decision) as a policy judges it. */
export interface CanaryQuestion {
  upload: UploadRecord;
  settings: RolloutSettings;
  /** Since when it is a canary (epoch ms): its written canary decision's time, else its readiness. */
  since: number;
  now: number;
}

/** A launch's boot choice as a policy judges it. */
export interface BootQuestion {
  provider: string;
  diskimage: string;
  view: RolloutView;
  /** The launch's key (its node id); absent for an availability check. */
  key?: string;
  /** Each candidate's combined phase now. */
  phase: (upload: UploadRecord) => RolloutState;
}

/** The keys a policy adds to `rollout:` and how they become its part of the settings. */
export interface PolicyKeys {
  /** The keys as written (kebab-case), with their schemas; defaults live here only. */
  fields: Readonly<Record<string, Field<unknown>>>;
  /** Its part of the settings, from the parsed `rollout:` mapping (camelCase keys). */
  settings(parsed: Readonly<Record<string, unknown>>): Partial<RolloutSettings>;
}

/**
 * One rollout policy. Every method is optional: a policy says only what it decides, and
 * undefined means "no say". How they combine: the first fixed phase wins, then a written
 * decision stands, then the first abort reason revokes, then a canary is promoted when every
 * policy that judges promotion agrees; the first boot answer wins, else the newest serves.
 */
export interface RolloutPolicy {
  readonly name: string;
  readonly keys?: PolicyKeys;
  /** A phase the store's records fix whatever the counts say (an operator's revocation). */
  fixedPhase?(upload: UploadRecord, revocations: readonly RevocationRecord[]): UploadPhase | undefined;
  /** Why the canary is revoked now. */
  abort?(q: CanaryQuestion): string | undefined;
  /** Whether this policy lets the canary be promoted now: false, not yet; else the words for it (null: none). */
  promotes?(q: CanaryQuestion): string | null | false;
  /** The upload a launch boots out of `newestFirst` (ready, usable, not revoked; at least one). */
  boot?(newestFirst: readonly UploadRecord[], q: BootQuestion): UploadRecord | undefined;
}

/** The parsed value of an object schema of `fields` (camelCase keys). */
type ParsedFields<F extends Record<string, Field<unknown>>> = ReturnType<typeof object<F>> extends { parse(...a: never[]): infer T } ? Exclude<T, undefined> : never;

/** A policy's keys, its settings typed from its fields. */
export function policyKeys<F extends Record<string, Field<unknown>>>(fields: F, settings: (parsed: ParsedFields<F>) => Partial<RolloutSettings>): PolicyKeys {
  return { fields, settings: (parsed) => settings(parsed as ParsedFields<F>) };
}
