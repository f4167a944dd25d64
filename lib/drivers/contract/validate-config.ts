/**
 * The config of the validation gate and the post-upload hook, shared by every driver that
 * takes uploaded images: a provider diskimage's `validate: {boot, command, timeout, label,
 * username, private-key}` and the provider's `post-upload-hook` (Nodepool 11's key). Runtime-free.
 */
import type { Problems } from '../../config/schema-kit.js';
import { absolutePath, bool, object, optional, seconds, string } from '../../config/schema-kit.js';

/** What a new upload must pass before it is ready, resolved against the provider's pools. */
export interface ValidationSpec {
  /** Boot a node from the upload; it must answer SSH with the host key its launch scanned. */
  readonly boot: boolean;
  /** Run over SSH on the validation node; exit 0 passes. Null: booting is the whole test. */
  readonly command: string | null;
  /** Seconds the whole validation (boot, SSH, command) may take. */
  readonly timeout: number;
  /** The pool and label the validation node is launched as (size, network, key). */
  readonly pool: string;
  readonly label: string;
  /** The SSH user for `command`; null: the user the node record names. */
  readonly username: string | null;
  /** The private key `command` logs in with (its public half is in the image or the provider's keys). */
  readonly privateKey: string | null;
}

const validateSchema = object({
  boot: optional(bool(), true),
  command: optional(string()),
  timeout: optional(seconds({ min: 1 }), 600),
  /** Absent: the first pool label that boots this diskimage. */
  label: optional(string()),
  username: optional(string()),
  'private-key': optional(absolutePath()),
});

/** Spread into a driver's provider-diskimage schema. */
export const providerDiskimageValidation = {
  validate: optional(validateSchema),
};

/**
 * Spread into a driver's provider schema: `<script> <provider> <external-id> <local-file>`, run by the builder; rc≠0 deletes the upload.
 * Any string, as Nodepool 11 takes it: a name without `/` is looked up in the builder's PATH, a relative path from its working directory.
 */
export const imageProviderFields = {
  'post-upload-hook': optional(string()),
};

type ValidateRaw = NonNullable<ReturnType<typeof validateSchema.parse>>;

/** The part of a driver's provider config this module reads. */
interface ImageProvider {
  readonly diskimages: ReadonlyArray<{ readonly name: string; readonly validate?: ValidateRaw | undefined }>;
  readonly pools: ReadonlyArray<{ readonly name: string; readonly labels: ReadonlyArray<{ readonly name: string; readonly diskimage?: string | undefined }> }>;
}

/** The pool label a validation of `diskimage` launches as, or undefined when no pool boots it. Pure. */
function validationLabel(c: ImageProvider, diskimage: string, wanted: string | undefined): { pool: string; label: string } | undefined {
  for (const pool of c.pools) {
    for (const l of pool.labels) {
      if (l.diskimage === diskimage && (wanted === undefined || l.name === wanted)) return { pool: pool.name, label: l.name };
    }
  }
  return undefined;
}

/** Cross-checks every `validate:` of a provider: a label to boot, and a key when there is a command. */
export function checkValidations(c: ImageProvider, at: string, p: Problems): void {
  c.diskimages.forEach((d, i) => {
    const v = d.validate;
    if (!v) return;
    const vat = `${at}.diskimages[${i}].validate`;
    if (!v.boot && v.command !== undefined) p.add(`${vat}.command`, 'a command needs a booted node: remove it or set boot: true');
    if (!v.boot) return;
    if (!validationLabel(c, d.name, v.label)) {
      p.add(v.label === undefined ? vat : `${vat}.label`, v.label === undefined
        ? `no pool label of this provider boots diskimage ${JSON.stringify(d.name)}, so there is nothing to validate it with`
        : `label ${JSON.stringify(v.label)} is not a pool label of this provider that boots diskimage ${JSON.stringify(d.name)}`);
    }
    if (v.command !== undefined && v.privateKey === undefined) p.add(`${vat}.private-key`, 'a command is run over SSH: name the private key to log in with');
  });
}

/** The resolved validation of a provider diskimage; null when it has none (or `boot: false`). */
export function validationOf(c: ImageProvider, d: ImageProvider['diskimages'][number]): ValidationSpec | null {
  const v = d.validate;
  if (!v?.boot) return null;
  const at = validationLabel(c, d.name, v.label);
  if (!at) return null;
  return {
    boot: true, command: v.command ?? null, timeout: v.timeout, pool: at.pool, label: at.label,
    username: v.username ?? null, privateKey: v.privateKey ?? null,
  };
}
