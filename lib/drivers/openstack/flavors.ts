/**
 * Flavor choice for a pool label (pure): Nodepool's `findFlavor`. With `min-ram`, the
 * smallest flavor with at least that much RAM whose name contains `flavor-name` (when
 * given); without it, the flavor whose name or id is exactly `flavor-name`.
 */
import type { NodeResources } from '../../store/models.js';

/** A flavor as Nova lists it. */
export interface Flavor {
  id: string;
  name: string;
  vcpus: number;
  /** MiB. */
  ram: number;
  /** GiB. */
  disk: number;
  /** Disabled flavors are never chosen. */
  disabled: boolean;
}

/** What a label asks for. */
export interface FlavorWish {
  minRam?: number | undefined;
  flavorName?: string | undefined;
}

/** The flavor for a label, or undefined when none matches. Ties on RAM go to fewer vcpus, then name. */
export function chooseFlavor(flavors: readonly Flavor[], wish: FlavorWish): Flavor | undefined {
  const usable = flavors.filter((f) => !f.disabled);
  if (wish.minRam === undefined) {
    if (wish.flavorName === undefined) return undefined;
    return usable.find((f) => f.name === wish.flavorName) ?? usable.find((f) => f.id === wish.flavorName);
  }
  const minRam = wish.minRam;
  const sorted = [...usable].sort((a, b) => a.ram - b.ram || a.vcpus - b.vcpus || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return sorted.find((f) => f.ram >= minRam && (wish.flavorName === undefined || f.name.includes(wish.flavorName)));
}

/** The quota a server of this flavor takes. */
export function flavorResources(f: Pick<Flavor, 'vcpus' | 'ram'>): NodeResources {
  return { cores: f.vcpus, ram: f.ram, instances: 1 };
}

/** How a label's flavor wish reads in messages: `min-ram 1024 (name contains "small")`. */
export function describeWish(wish: FlavorWish): string {
  if (wish.minRam === undefined) return `flavor ${JSON.stringify(wish.flavorName ?? '')}`;
  return `min-ram ${wish.minRam}${wish.flavorName === undefined ? '' : ` (name contains ${JSON.stringify(wish.flavorName)})`}`;
}
