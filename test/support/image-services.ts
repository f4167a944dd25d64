/**
 * Image services for in-process daemons in tests: the process's real factory, reading only
 * the config's `clouds-file` (no standard locations: a developer's ~/.config/openstack must
 * never leak into a test).
 */
import type { ImageServiceFactory } from '../../lib/drivers/image-service.js';
import { hostImageServices } from '../../lib/drivers/registry.js';
import type { Logger } from '../../lib/log.js';

export function testImageServices(cloudsFile: () => string | undefined, log: Logger): ImageServiceFactory {
  return hostImageServices({ cloudsFile, env: {}, homeDir: '/nonexistent', cwd: '/nonexistent', log });
}
