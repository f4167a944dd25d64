/**
 * The `openstack` driver's provider config: schema (defaults live here only), parsed type,
 * and value equality so a reload restarts only providers whose config changed.
 */
import { DISKIMAGE_NAME_RE, IMAGE_FORMATS } from '../../images/image-file.js';
import { bool, int, list, object, oneOf, optional, record, required, scalarString, string } from '../../config/schema-kit.js';

const providerDiskimage = object({
  name: required(string({ pattern: DISKIMAGE_NAME_RE, patternText: 'a diskimage name' })),
  pause: optional(bool(), false),
  meta: optional(record(scalarString()), {}),
  'config-drive': optional(bool(), true),
});

const poolLabel = object({
  name: required(string()),
  diskimage: optional(string()),
  'cloud-image': optional(string()),
  'min-ram': optional(int({ min: 0 })),
  'flavor-name': optional(string()),
  'key-name': optional(string()),
  'boot-from-volume': optional(bool(), false),
  'volume-size': optional(int({ min: 1 }), 50),
  'console-log': optional(bool(), false),
});

const pool = object({
  name: required(string()),
  'max-servers': optional(int({ min: 0 }), Number.MAX_SAFE_INTEGER),
  'max-cores': optional(int({ min: 0 })),
  'max-ram': optional(int({ min: 0 })),
  networks: optional(list(string()), []),
  'availability-zones': optional(list(string()), []),
  labels: optional(list(poolLabel, { uniqueBy: (l) => l.name, what: 'label' }), []),
});

/** Schema of one `driver: openstack` provider. */
export const openstackProviderSchema = object({
  name: required(string()),
  driver: required(oneOf(['openstack'] as const)),
  cloud: required(string()),
  'region-name': optional(string()),
  'image-format': optional(oneOf(IMAGE_FORMATS.filter((f) => f !== 'tar' && f !== 'squashfs')), 'qcow2'),
  'image-name-format': optional(string(), '{image_name}-{timestamp}'),
  'launch-timeout': optional(int({ min: 1 }), 3600),
  'launch-retries': optional(int({ min: 0 }), 3),
  'boot-timeout': optional(int({ min: 1 }), 60),
  'host-key-checking': optional(bool(), true),
  rate: optional(int({ min: 0 }), 0),
  diskimages: optional(list(providerDiskimage, { uniqueBy: (d) => d.name, what: 'diskimage' }), []),
  pools: optional(list(pool, { uniqueBy: (p) => p.name, what: 'pool' }), []),
});

type Parsed<S> = S extends { parse(...args: never[]): infer T | undefined } ? Exclude<T, undefined> : never;
/** A loaded `driver: openstack` provider. */
export type OpenStackProviderConfig = Parsed<typeof openstackProviderSchema>;
