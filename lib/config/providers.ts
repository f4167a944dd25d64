/**
 * `providers:`: each entry parsed with its driver's schema (lib/drivers/config-registry.ts:
 * config parts only). A provider of a driver Nodepool 11 has and this program does not (aws,
 * azure, gce, …, and Nodepool's test drivers) is accepted with a warning naming it and left
 * out of the config: it is not run. Any other driver name is a problem naming the provider.
 */
import { DEFAULT_DRIVER, DRIVER_NAMES, driverConfigs, type ProviderConfig } from '../drivers/config-registry.js';
import { describeValue, type Problems, type Schema } from './schema-kit.js';

/** Drivers of Nodepool 11 (nodepool/driver/*) that this program does not have. */
export const NODEPOOL_ONLY_DRIVERS = [
  'aws', 'azure', 'gce', 'ibmvpc', 'kubernetes', 'openshift', 'openshiftpods', 'metastatic', 'fake', 'example', 'test',
] as const;

/** What {@link providerEntry} gives for a provider that is skipped. */
const SKIPPED = Symbol('skipped provider');

function providerEntry(v: unknown, path: string, p: Problems): ProviderConfig | typeof SKIPPED | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    p.add(path, `expected a provider mapping, got ${Array.isArray(v) ? 'a list' : describeValue(v, path)}`);
    return undefined;
  }
  const raw: Record<string, unknown> = { driver: DEFAULT_DRIVER, ...(v as Record<string, unknown>) };
  const driver = raw.driver;
  const name = typeof raw.name === 'string' ? ` (provider ${raw.name})` : '';
  if (typeof driver === 'string' && (NODEPOOL_ONLY_DRIVERS as readonly string[]).includes(driver)) {
    p.warn(`${path}.driver`, `Nodepool's driver ${JSON.stringify(driver)} is not supported here${name}: this provider is skipped (not run); its keys are not checked`);
    return SKIPPED;
  }
  if (typeof driver !== 'string' || !(DRIVER_NAMES as readonly string[]).includes(driver)) {
    p.add(`${path}.driver`, `unknown driver ${JSON.stringify(driver)}${name}: expected one of ${DRIVER_NAMES.join(', ')}`);
    return undefined;
  }
  return (driverConfigs[driver as ProviderConfig['driver']].providerSchema as Schema<ProviderConfig>).parse(raw, path, p);
}

/** The providers this program runs, names unique (skipped ones included in that check). */
export function providerList(): Schema<ProviderConfig[]> {
  return {
    expected: 'a list of a provider mapping',
    parse(v, path, p) {
      if (!Array.isArray(v)) {
        p.add(path, `expected ${this.expected}, got ${describeValue(v, path)}`);
        return undefined;
      }
      const out: ProviderConfig[] = [];
      const seen = new Map<string, number>();
      let ok = true;
      v.forEach((raw, i) => {
        const at = `${path}[${i}]`;
        const parsed = providerEntry(raw, at, p);
        if (parsed === undefined) { ok = false; return; }
        const name = parsed === SKIPPED ? (raw as Record<string, unknown>).name : parsed.name;
        if (typeof name === 'string') {
          const first = seen.get(name);
          if (first !== undefined) {
            p.add(at, `duplicate provider ${JSON.stringify(name)} (also at ${path}[${first}])`);
            ok = false;
          } else seen.set(name, i);
        }
        if (parsed !== SKIPPED) out.push(parsed);
      });
      return ok ? out : undefined;
    },
  };
}
