/**
 * Host accesses and image services for in-process daemons in tests: the process's real
 * {@link driverHosts}, with only the config's `clouds-file` as the host's settings (no standard
 * locations: a developer's ~/.config/openstack must never leak into a test).
 */
import { driverHosts, type DriverHosts } from '../../lib/drivers/core/driver-hosts.js';
import type { Logger } from '../../lib/log.js';

export function testImageServices(cloudsFile: () => string | undefined, log: Logger): DriverHosts {
  return driverHosts({ settings: () => ({ cloudsFile: cloudsFile() }), env: {}, homeDir: '/nonexistent', cwd: '/nonexistent', log });
}
