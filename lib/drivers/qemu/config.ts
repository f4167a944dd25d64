/**
 * The `qemu` driver's provider config: VMs on the launcher's own host, booted with
 * `qemu-system-x86_64` from copy-on-write overlays of nodepool's uploads. The schema holds
 * every default (written only here); compiling resolves `state-dir` (absent: `<image-dir>/vms`)
 * and each pool's `host-key-checking` (absent: the provider's). Runtime-free: imports no
 * process or file code.
 */
import path from 'node:path';
import type { Problems, Schema } from '../../config/schema-kit.js';
import { diskimageName } from '../../config/names.js';
import { providerDiskimageRollout } from '../../rollout/rollout-schema.js';
import { absolutePath, bool, int, list, object, oneOf, optional, record, required, scalarString, seconds, string } from '../../config/schema-kit.js';
import { commonPoolFields, commonProviderFields } from '../contract/common-config.js';
import { checkValidations, imageProviderFields, providerDiskimageValidation, validationOf } from '../contract/validate-config.js';
import type { DriverConfig, ImageTarget, PoolInfo } from '../contract/driver-config.js';

/** How VMs are accelerated: `auto` uses KVM only when a probe VM actually boots with it (see accel.ts). */
export const ACCELS = ['auto', 'kvm', 'tcg'] as const;
export type Accel = (typeof ACCELS)[number];

const providerDiskimage = object({
  name: required(diskimageName()),
  pause: optional(bool(), false),
  meta: optional(record(scalarString()), {}),
  ...providerDiskimageValidation,
  ...providerDiskimageRollout,
});

const poolLabel = object({
  name: required(string()),
  diskimage: required(string()),
  /** MiB of guest memory. */
  memory: optional(int({ min: 128 }), 1024),
  cpus: optional(int({ min: 1, max: 64 }), 1),
});

const pool = object({
  ...commonPoolFields,
  /** Absent: the provider's `host-key-checking`. */
  'host-key-checking': optional(bool()),
  labels: optional(list(poolLabel, { uniqueBy: (l) => l.name, what: 'label' }), []),
});

const rawProviderSchema = object({
  ...commonProviderFields,
  driver: required(oneOf(['qemu'] as const)),
  /** Where uploads land (`<id>.qcow2` + `<id>.json`); the builder writes here, so it is on the launcher's host or a shared filesystem. */
  'image-dir': required(absolutePath()),
  /** VM overlays, seeds, console logs and pid files (local to the launcher's host). Absent: `<image-dir>/vms`. */
  'state-dir': optional(absolutePath()),
  accel: optional(oneOf(ACCELS), 'auto'),
  /** Seconds from starting QEMU until the guest's SSH answers a key scan. */
  'boot-timeout': optional(seconds({ min: 1 }), 300),
  /** The login user the node record names (cloud-init's default user of the image). */
  username: optional(string(), 'debian'),
  /** A file of SSH public keys the seed gives the guest's user (absent: none). */
  'authorized-keys': optional(absolutePath()),
  /** The default of every pool's `host-key-checking`: record the scanned host keys on the node. */
  'host-key-checking': optional(bool(), true),
  /** The QEMU system emulator. */
  'qemu-binary': optional(string(), 'qemu-system-x86_64'),
  'image-name-format': optional(string(), '{image_name}-{timestamp}'),
  /** Seconds one upload (copy or conversion into image-dir) may take. */
  'image-upload-timeout': optional(seconds({ min: 1 }), 3600),
  ...imageProviderFields,
  diskimages: optional(list(providerDiskimage, { uniqueBy: (d) => d.name, what: 'diskimage' }), []),
  pools: optional(list(pool, { uniqueBy: (p) => p.name, what: 'pool' }), []),
});

type Parsed<S> = S extends { parse(...args: never[]): infer T | undefined } ? Exclude<T, undefined> : never;
type Raw = Parsed<typeof rawProviderSchema>;

/** A diskimage this provider takes uploads of. */
export type QemuDiskimageConfig = Readonly<Raw['diskimages'][number]>;
/** One label of a pool: the diskimage it boots and the VM's size. */
export type QemuLabelConfig = Readonly<Raw['pools'][number]['labels'][number]>;
/** One pool, with `host-key-checking` resolved. */
export type QemuPoolConfig = Readonly<Omit<Raw['pools'][number], 'hostKeyChecking' | 'labels'>> & {
  readonly hostKeyChecking: boolean;
  readonly labels: readonly QemuLabelConfig[];
};
/** A loaded `driver: qemu` provider. */
export type QemuProviderConfig = Readonly<Omit<Raw, 'stateDir' | 'diskimages' | 'pools'>> & {
  readonly stateDir: string;
  readonly diskimages: readonly QemuDiskimageConfig[];
  readonly pools: readonly QemuPoolConfig[];
};

/** Schema of one `driver: qemu` provider (parses, checks, compiles). */
export const qemuProviderSchema: Schema<QemuProviderConfig> = {
  expected: rawProviderSchema.expected,
  parse(v, at, p) {
    const raw = rawProviderSchema.parse(v, at, p);
    if (raw === undefined) return undefined;
    return {
      ...raw,
      stateDir: raw.stateDir ?? path.join(raw.imageDir, 'vms'),
      pools: raw.pools.map((pl) => ({ ...pl, hostKeyChecking: pl.hostKeyChecking ?? raw.hostKeyChecking })),
    };
  },
};

/** Cross-checks: every label's diskimage is one of the provider's diskimages. */
export function checkQemuReferences(c: QemuProviderConfig, _known: { labels: ReadonlySet<string>; diskimages: ReadonlySet<string> }, at: string, p: Problems): void {
  const images = new Set(c.diskimages.map((d) => d.name));
  c.pools.forEach((pool, k) => pool.labels.forEach((l, m) => {
    if (!images.has(l.diskimage)) p.add(`${at}.pools[${k}].labels[${m}].diskimage`, `diskimage ${JSON.stringify(l.diskimage)} is not listed in ${at}.diskimages`);
  }));
  checkValidations(c, at, p);
}

/** What the launcher needs of one pool. */
export function qemuPoolInfo(pl: QemuPoolConfig): PoolInfo {
  return { name: pl.name, maxServers: pl.maxServers, labels: pl.labels.map((l) => l.name), nodeAttributes: pl.nodeAttributes };
}

/** The diskimages the provider takes, always as qcow2 (the overlays' backing format). */
export function qemuImageTargets(c: QemuProviderConfig): ImageTarget[] {
  return c.diskimages.map((d) => ({
    diskimage: d.name, format: 'qcow2', pause: d.pause, meta: d.meta, nameFormat: c.imageNameFormat, uploadTimeout: c.imageUploadTimeout,
    validate: validationOf(c, d), postUploadHook: c.postUploadHook ?? null, rollout: d.rollout ?? null,
  }));
}

/** The qemu driver's config part (runtime-free; lib/drivers/qemu/index.ts adds providers). */
export const qemuConfig: DriverConfig<QemuProviderConfig> = {
  name: 'qemu',
  providerSchema: qemuProviderSchema,
  pools: (c) => c.pools.map(qemuPoolInfo),
  checkReferences: checkQemuReferences,
  imageTargets: qemuImageTargets,
  snapshotBuilds: { usernameRequired: false },
};
