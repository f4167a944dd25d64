/**
 * The `static` driver's provider config: a list of hosts per pool (schema only; the
 * driver itself arrives with the launcher).
 */
import { bool, int, list, object, oneOf, optional, required, string } from '../../config/schema-kit.js';

const staticNode = object({
  name: required(string()),
  labels: required(list(string(), { minItems: 1, what: 'label' })),
  username: optional(string(), 'zuul'),
  'connection-type': optional(oneOf(['ssh', 'winrm'] as const), 'ssh'),
  'connection-port': optional(int({ min: 1, max: 65535 }), 22),
  'host-key': optional(string()),
  'host-key-checking': optional(bool(), true),
  timeout: optional(int({ min: 1 }), 5),
  'max-parallel-jobs': optional(int({ min: 1 }), 1),
});

const pool = object({
  name: required(string()),
  nodes: optional(list(staticNode, { uniqueBy: (n) => `${n.name}:${n.connectionPort}`, what: 'node' }), []),
});

/** Schema of one `driver: static` provider. */
export const staticProviderSchema = object({
  name: required(string()),
  driver: required(oneOf(['static'] as const)),
  pools: optional(list(pool, { uniqueBy: (p) => p.name, what: 'pool' }), []),
});

type Parsed<S> = S extends { parse(...args: never[]): infer T | undefined } ? Exclude<T, undefined> : never;
/** A loaded `driver: static` provider. */
export type StaticProviderConfig = Parsed<typeof staticProviderSchema>;
