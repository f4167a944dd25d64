/**
 * The installation id of a ZooKeeper store, in the znode `<chroot>/nodepool/installation`
 * (beside Nodepool's layout, which never looks at it) as JSON `{"id", "created"}`. Made on the
 * first call that asks for it, never when the store opens, so a read-only CLI command creates
 * nothing. Two servers racing the first call agree: the create that loses reads the winner's id.
 */
import { StoreError, ZooKeeperError } from '../../errors.js';
import { INSTALLATION_ID_RE, newInstallationId } from '../installation.js';
import type { ZkClient } from './zk-client.js';

/** The id in `path`, undefined when there is none yet. */
export async function zkInstallationPeek(client: ZkClient, path: string): Promise<string | undefined> {
  const got = await client.getData(path);
  if (!got) return undefined;
  let id: unknown;
  try {
    id = (JSON.parse(got.data.toString('utf8')) as { id?: unknown }).id;
  } catch {
    id = undefined;
  }
  if (typeof id !== 'string' || !INSTALLATION_ID_RE.test(id)) {
    throw new StoreError(`${path} does not hold an installation id; remove it by hand only if this store is really new`);
  }
  return id;
}

/**
 * Reads, creating it once when missing, the store's installation id; a store without one takes
 * `adopt` when given (an import carrying its source store's id).
 */
export async function zkInstallationId(client: ZkClient, path: string, clock: () => number, adopt?: string): Promise<string> {
  for (let attempt = 1; attempt <= 3; attempt++) {
    const existing = await zkInstallationPeek(client, path);
    if (existing) return existing;
    const id = adopt ?? newInstallationId();
    try {
      await client.create(path, Buffer.from(JSON.stringify({ id, created: clock() })));
      return id;
    } catch (err) {
      // Another server created it first, or a lost connection hid our own create: read it.
      if (!(err instanceof ZooKeeperError) || (err.code !== 'NODE_EXISTS' && err.code !== 'CONNECTION_LOSS' && err.code !== 'OPERATION_TIMEOUT')) throw err;
    }
  }
  throw new StoreError(`${path}: could not read or create the installation id`);
}
