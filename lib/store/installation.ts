/**
 * The identity of an installation: one random id per state store, created the first time the
 * server asks for it and never changed. Builds and cloud images carry it (the build job's
 * `installation` key, the sidecar's `installation`, the image property
 * `nodepool_installation_id`), so two installations sharing a gearmand or a cloud, or a server
 * started on an empty or wrong store, can tell their own files and images from another's.
 */
import { randomUUID } from 'node:crypto';
import { StoreError } from '../errors.js';

/** The image property that carries the installation id of the store an upload was made for. */
export const INSTALLATION_PROPERTY = 'nodepool_installation_id';

/** An installation id: a lower-case UUID. */
export const INSTALLATION_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A new installation id. */
export function newInstallationId(): string {
  return randomUUID();
}

/** `data` with the source store's installation id, when it has one (export). */
export function withInstallation<T extends object>(data: T, installation: string | undefined): T & { installation?: string } {
  return installation ? { ...data, installation } : data;
}

/**
 * Refuses an import of another installation's data into a store that already has its own id
 * (a server has used it): the builders holding the imported builds would refuse its jobs.
 */
export function checkImportInstallation(current: string | undefined, data: { installation?: string }): void {
  if (!data.installation || !current || current === data.installation) return;
  throw new StoreError(
    `this store already belongs to installation ${current} (a server has used it), the data to installation ${data.installation}: `
    + 'builders holding the imported builds would refuse its jobs. Import into a state-dir or chroot no server has used',
  );
}
