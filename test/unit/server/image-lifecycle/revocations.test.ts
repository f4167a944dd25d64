import { bid, build, NOW, revocation, table, uid, upload } from './planner-fixtures.js';
import { revocationGraceMs } from '../../../../server/image-lifecycle/revocations.js';

const forget = (seq: number) => ({ type: 'forget-revocation' as const, diskimage: 'a', buildId: bid('a', seq) });
const GOOD = [build('a', 2), build('a', 3)];
/** The fixtures' `image-lifecycle.interval`. */
const INTERVAL_S = 10;

table('rule 7: a revocation outlives its build only briefly', [
  {
    name: 'removes the revocation of a build with no record and no upload left',
    builds: GOOD, uploads: [upload(2, 'a', 2), upload(3, 'a', 3)], revocations: [revocation('a', 1)],
    actions: [forget(1)],
  },
  {
    name: 'keeps it while the build has a record, whatever its state',
    builds: [build('a', 1, 'deleting'), ...GOOD], uploads: [upload(2, 'a', 2), upload(3, 'a', 3)], revocations: [revocation('a', 1)],
    actions: [{ type: 'delete-build', buildId: bid('a', 1), reason: 'resuming deletion' }],
  },
  {
    name: 'keeps it while an upload of the build is left (a launcher could still boot it)',
    builds: GOOD, uploads: [upload(1, 'a', 1, 'p1', 'deleting'), upload(2, 'a', 2), upload(3, 'a', 3)], revocations: [revocation('a', 1)],
    actions: [{ type: 'delete-upload', uploadId: uid(1), reason: 'resuming deletion' }],
  },
  {
    name: 'keeps a revocation younger than the grace (the build may have been created while the snapshot was read)',
    builds: GOOD, uploads: [upload(2, 'a', 2), upload(3, 'a', 3)],
    revocations: [{ ...revocation('a', 4), since: NOW - revocationGraceMs(INTERVAL_S) + 1000 }],
    actions: [],
  },
  {
    name: 'removes one per gone build, of a diskimage no longer in the config too',
    builds: GOOD, uploads: [upload(2, 'a', 2), upload(3, 'a', 3)],
    revocations: [revocation('a', 1), revocation('gone', 7)],
    actions: [forget(1), { type: 'forget-revocation', diskimage: 'gone', buildId: bid('gone', 7) }],
  },
]);
