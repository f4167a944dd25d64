/**
 * The `qemu` driver: VMs on the launcher's host (qemu-system-x86_64), booted from
 * copy-on-write overlays of nodepool's uploads, which land as qcow2 files in `image-dir`. It
 * reaches no remote cloud, so it has no host access: its image service is the directory.
 */
import type { Driver } from '../contract/driver.js';
import { QemuBuildInstances } from './build-instances.js';
import { qemuConfig, type QemuProviderConfig } from './config.js';
import { QemuImageService } from './image-store.js';
import { QemuProvider } from './provider.js';

export const qemuDriver: Driver<QemuProviderConfig> = {
  ...qemuConfig,
  createProvider: (c, ctx) => new QemuProvider(c, ctx),
  imageService: (c, _access, log) => new QemuImageService({ imageDir: c.imageDir, log }),
  buildInstances: (c, _access, log) => new QemuBuildInstances(c, log),
};
