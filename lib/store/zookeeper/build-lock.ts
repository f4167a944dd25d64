/**
 * A running build, as Nodepool 11 looks for one: its `getBuildRequest` calls a build request
 * `building` (not `pending`) while `/nodepool/images/<image>/builds/lock` has a child, i.e.
 * while someone holds or waits for kazoo's build `Lock` there. Our builds run on builders that
 * never touch ZooKeeper, so the store holds that place for them: an ephemeral sequential
 * contender `<uuid hex>__lock__<10-digit seq>` (kazoo's name) created in the transaction that
 * creates the build, owned by the store's session, whose data is the build id. It goes when the
 * build leaves `building` or is deleted, or with the session.
 */
import { randomUUID } from 'node:crypto';
import { ZooKeeperError } from '../../errors.js';
import { LOCK_DIR, LOCK_NODE_MARK } from './layout.js';
import type { ZkClient } from './zk-client.js';
import { MODE, type Op } from './zk-library.js';

/** The build lock directory under `builds`. */
export const buildLockDir = (builds: string): string => `${builds}/${LOCK_DIR}`;

/** The create of a build's contender, for the transaction that creates build `id`. */
export function contenderOp(builds: string, id: string): Op {
  const name = `${randomUUID().replaceAll('-', '')}${LOCK_NODE_MARK}`;
  return { op: 'create', path: `${buildLockDir(builds)}/${name}`, data: Buffer.from(id), mode: MODE.ephemeralSequential };
}

/**
 * Removes the contenders whose data (a build id) `stale` accepts; others' contenders (a
 * Nodepool builder's) never name one of our builds. Best effort: a contender left by a lost
 * connection goes with the session, or at the next build's sweep of `builds`.
 */
export async function removeContenders(client: ZkClient, builds: string, stale: (buildId: string) => boolean): Promise<number> {
  const dir = buildLockDir(builds);
  let removed = 0;
  let names: string[] | undefined;
  try {
    names = await client.getChildren(dir);
  } catch {
    return 0;
  }
  for (const name of names ?? []) {
    if (!name.includes(LOCK_NODE_MARK)) continue;
    try {
      const got = await client.getData(`${dir}/${name}`);
      if (!got || !stale(got.data.toString('utf8'))) continue;
      await client.remove(`${dir}/${name}`);
      removed++;
    } catch (err) {
      if (!(err instanceof ZooKeeperError)) throw err;
    }
  }
  return removed;
}
