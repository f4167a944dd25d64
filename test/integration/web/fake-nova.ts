/**
 * A small stateful Nova and Neutron on a {@link ScriptedCloud}, enough for the openstack driver
 * to launch and delete servers: flavors `m1.tiny` and `m1.broken` (every create with it is
 * refused with 400 "No valid host"), network `private`, generous limits, servers that are
 * ACTIVE at once with a private address. Also writes the clouds.yaml naming it `scripted`.
 */
import type { ScriptedAnswer, ScriptedCloud } from '../../support/scripted-cloud.js';

interface Server {
  id: string;
  name: string;
  status: string;
  metadata: Record<string, string>;
  addresses: Record<string, Array<{ addr: string; version: number }>>;
  flavor: { original_name: string; vcpus: number; ram: number };
}

const FLAVORS = [
  { id: 'f-tiny', name: 'm1.tiny', vcpus: 1, ram: 512, disk: 1 },
  { id: 'f-broken', name: 'm1.broken', vcpus: 1, ram: 512, disk: 1 },
];

/** Options of {@link playNova}. */
export interface PlayNovaOptions {
  /** Asked at every server create: an answer to give instead (a fault), or undefined to create the server. */
  createFault?: () => ScriptedAnswer | undefined;
}

/** Adds the routes; returns the servers by id (live view). */
export function playNova(cloud: ScriptedCloud, opts: PlayNovaOptions = {}): Map<string, Server> {
  const servers = new Map<string, Server>();
  let seq = 0;
  cloud
    .answer('GET', /^\/v2\.1\/flavors\/detail$/, { body: { flavors: FLAVORS } })
    .answer('GET', /^\/v2\.0\/networks$/, { body: { networks: [{ id: 'net-1', name: 'private' }] } })
    // No ports or floating IPs to find (Neutron lists, filtered or not, come back empty).
    .answer('GET', /^\/v2\.0\/ports(?:\?.*)?$/, { body: { ports: [] } })
    .answer('GET', /^\/v2\.0\/floatingips(?:\?.*)?$/, { body: { floatingips: [] } })
    .answer('GET', /^\/v2\.1\/limits$/, { body: { limits: { absolute: { maxTotalInstances: 100, maxTotalCores: 100, maxTotalRAMSize: 1_000_000 } } } })
    .answer('GET', /^\/v2\.1\/os-availability-zone$/, { body: { availabilityZoneInfo: [{ zoneName: 'nova', zoneState: { available: true } }] } })
    .answer('POST', /^\/v2\.1\/servers$/, (req) => {
      const fault = opts.createFault?.();
      if (fault) return fault;
      const spec = (JSON.parse(req.body) as { server: { name: string; flavorRef: string; metadata?: Record<string, string> } }).server;
      if (spec.flavorRef === 'f-broken') return { status: 400, body: { badRequest: { code: 400, message: 'No valid host was found.' } } };
      seq += 1;
      const id = `srv-${seq}`;
      const flavor = FLAVORS.find((f) => f.id === spec.flavorRef) ?? FLAVORS[0]!;
      servers.set(id, {
        id, name: spec.name, status: 'ACTIVE', metadata: spec.metadata ?? {},
        addresses: { private: [{ addr: `10.0.0.${seq}`, version: 4 }] },
        flavor: { original_name: flavor.name, vcpus: flavor.vcpus, ram: flavor.ram },
      });
      return { status: 202, body: { server: { id } } };
    })
    .answer('GET', /^\/v2\.1\/servers\/[^/]+$/, (req) => {
      const s = servers.get(req.path.split('?')[0]!.split('/').pop() ?? '');
      return s ? { body: { server: s } } : { status: 404, body: { itemNotFound: { code: 404, message: 'not found' } } };
    })
    .answer('GET', /^\/v2\.1\/servers\/detail$/, () => ({ body: { servers: [...servers.values()] } }))
    .answer('DELETE', /^\/v2\.1\/servers\/[^/]+$/, (req) => {
      servers.delete(req.path.split('/').pop() ?? '');
      return { status: 204 };
    });
  return servers;
}
