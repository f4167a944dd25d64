/**
 * Neutron clean-up of one openstack provider: the floating IPs of a server being deleted,
 * `port-cleanup-interval` (DOWN ports seen on two checks) and `clean-floating-ips` (floating
 * IPs bound to no port). Nothing happens without a network service.
 */
import { coerceError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { ProviderContext } from '../contract/driver.js';
import type { OpenStackAccess } from './access.js';
import type { NeutronClient } from './neutron.js';
import { notePorts, planPortCleanup, portCheckDue, type PortCleanupState } from './port-cleanup.js';

/** What {@link NetworkCleanup} uses of its provider. */
export interface NetworkCleanupDeps {
  /** Neutron, or null when the cloud's catalog has no network service. */
  neutron(): Promise<NeutronClient | null>;
  readonly log: Logger;
  readonly ctx: Pick<ProviderContext<OpenStackAccess>, 'clock' | 'onLeak'>;
}

export class NetworkCleanup {
  private portCleanup: PortCleanupState | undefined;

  constructor(private readonly deps: NetworkCleanupDeps) {}

  private get log(): Logger {
    return this.deps.log;
  }

  private get ctx(): NetworkCleanupDeps['ctx'] {
    return this.deps.ctx;
  }

  /** Deletes the floating IPs bound to a server's ports (before the server, whose ports go with it). */
  async deleteFloatingIps(serverId: string): Promise<void> {
    const neutron = await this.deps.neutron();
    if (!neutron) return;
    for (const port of await neutron.listPorts({ deviceId: serverId })) {
      for (const fip of await neutron.floatingIpsOfPort(port.id)) {
        if (await neutron.deleteFloatingIp(fip.id)) this.log.info('floating ip deleted', { externalId: serverId, floatingIp: fip.address });
      }
    }
  }

  /**
   * `port-cleanup-interval`: notes the project's DOWN compute ports, and deletes those DOWN on
   * two checks more than the interval apart (port-cleanup.ts). Nothing without a network service.
   */
  async cleanupDownPorts(interval: number): Promise<void> {
    if (!portCheckDue(this.portCleanup, this.ctx.clock(), interval)) return;
    const neutron = await this.deps.neutron();
    if (!neutron) return;
    const plan = planPortCleanup(this.portCleanup, this.ctx.clock(), interval, await neutron.listPorts({ status: 'DOWN' }));
    if (plan.action === 'delete') {
      for (const id of plan.ids) {
        try {
          if (await neutron.deletePort(id)) this.log.info('deleted a port DOWN on two checks', { port: id, intervalS: interval });
        } catch (err) {
          this.log.warn('could not delete a DOWN port', { port: id, error: coerceError(err).message });
        }
      }
      if (plan.ids.length) this.ctx.onLeak?.('port', plan.ids.length);
    }
    // As Nodepool: the DOWN ports are listed afresh after the deletes.
    if (plan.action !== 'wait') this.portCleanup = notePorts(this.ctx.clock(), await neutron.listPorts({ status: 'DOWN' }));
  }

  /** `clean-floating-ips`: deletes the project's floating IPs bound to no port. Nothing without a network service. */
  async cleanupFloatingIps(): Promise<void> {
    const neutron = await this.deps.neutron();
    if (!neutron) return;
    let deleted = 0;
    for (const fip of await neutron.unattachedFloatingIps()) {
      if (await neutron.deleteFloatingIp(fip.id)) {
        deleted += 1;
        this.log.info('deleted an unattached floating ip (clean-floating-ips)', { floatingIp: fip.address });
      }
    }
    if (deleted) this.ctx.onLeak?.('floating-ip', deleted);
  }
}
