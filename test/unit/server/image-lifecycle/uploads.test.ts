import { ago, bid, build, config, NOW, table, uid, upload } from './planner-fixtures.js';

const A1 = bid('a', 1);
const A2 = bid('a', 2);
const startUpload = (buildId: string, provider = 'p1') => ({ type: 'start-upload' as const, buildId, provider, imageName: 'a' });
const failUpload = (n: number, reason: string) => ({ type: 'fail-upload' as const, uploadId: uid(n), reason });
/** a-1 uploaded to p1, a-2 being uploaded there. */
const UPLOADING = { builds: [build('a', 1), build('a', 2)], uploads: [upload(1, 'a', 1), upload(2, 'a', 2, 'p1', 'uploading')] };

table('rule 3: uploads', [
  {
    name: 'uploads the newest ready build to a provider that lacks it',
    builds: [build('a', 1)],
    actions: [startUpload(A1)], target: { waiting: null, failures: 0, paused: null },
  },
  {
    name: 'uploads the newest build even when an older one is uploaded',
    builds: [build('a', 1), build('a', 2)], uploads: [upload(1, 'a', 1)],
    actions: [startUpload(A2)],
  },
  {
    name: 'uploads to every provider that lists the diskimage',
    config: config({ providers: [{ name: 'p1', cloud: 'c', diskimages: [{ name: 'a' }] }, { name: 'p2', cloud: 'c', diskimages: [{ name: 'a' }] }] }),
    builds: [build('a', 1)],
    actions: [startUpload(A1, 'p1'), startUpload(A1, 'p2')],
  },
  {
    name: 'does nothing when the newest build is uploaded',
    builds: [build('a', 1)], uploads: [upload(1, 'a', 1)],
    actions: [],
  },
  {
    name: 'starts no second upload to a target while one is uploading',
    ...UPLOADING, inFlight: { uploads: [uid(2)] },
    actions: [],
  },
  {
    name: 'fails an in-flight upload when no builder holds its build any more',
    ...UPLOADING, inFlight: { uploads: [uid(2)] }, gearman: { [`image-upload:${A2}`]: [] },
    actions: [failUpload(2, `no builder holds ${A2} any more`)], target: { failures: 1, retryAt: NOW + 60_000 },
  },
  {
    name: 'leaves an in-flight upload alone while gearmand admin is unreachable',
    ...UPLOADING, inFlight: { uploads: [uid(2)] }, gearman: null,
    actions: [],
  },
  {
    name: 'fails an upload without a job here whose build is no longer ready',
    builds: [build('a', 1), build('a', 2, 'lost')], uploads: UPLOADING.uploads,
    actions: [failUpload(2, `build ${A2} is lost`)],
  },
  {
    name: 'fails an upload without a job here whose build is gone',
    builds: [build('a', 1)], uploads: UPLOADING.uploads,
    actions: [failUpload(2, `build ${A2} no longer exists`)],
  },
  {
    name: 'fails an upload without a job here when no builder holds its build',
    ...UPLOADING, gearman: { [`image-upload:${A2}`]: [] },
    actions: [failUpload(2, `no builder holds ${A2} any more`)],
  },
  {
    name: 'leaves an upload without a job here alone while gearmand admin is unreachable',
    ...UPLOADING, gearman: null,
    actions: [],
  },
  {
    name: 'resumes an upload without a job here',
    ...UPLOADING,
    actions: [{ type: 'resume-upload', uploadId: uid(2) }],
  },
  {
    name: 'fails an upload without a job here whose provider no longer lists the diskimage',
    builds: [build('a', 1)], uploads: [upload(1, 'a', 1), upload(2, 'a', 1, 'p9', 'uploading')],
    actions: [failUpload(2, 'provider p9 no longer lists a')],
  },
  {
    name: 'does not upload to a provider diskimage paused in the config',
    config: config({ providers: [{ name: 'p1', cloud: 'c', diskimages: [{ name: 'a', pause: true }] }] }), builds: [build('a', 1)],
    actions: [], target: { paused: 'config' },
  },
  {
    name: 'does not upload to a target the operator paused',
    builds: [build('a', 1)], pauses: [{ diskimage: 'a', provider: 'p1', since: ago(10), reason: null }],
    actions: [], target: { paused: 'operator' },
  },
  {
    name: 'a diskimage build pause does not stop its uploads',
    builds: [build('a', 1)], pauses: [{ diskimage: 'a', provider: null, since: ago(10), reason: null }],
    actions: [startUpload(A1)], target: { paused: null },
  },
  {
    name: 'waits out the retry delay after a failed upload',
    builds: [build('a', 1)], uploads: [upload(1, 'a', 1, 'p1', 'failed', { stateTime: ago(30) })],
    actions: [], target: { failures: 1, retryAt: ago(30) + 60_000, lastFailure: 'glance said no', waiting: null },
  },
  {
    name: 'retries a failed upload once the retry delay has passed',
    builds: [build('a', 1)], uploads: [upload(1, 'a', 1, 'p1', 'failed', { stateTime: ago(60) })],
    actions: [startUpload(A1)],
  },
  {
    name: 'doubles the upload retry delay per consecutive failure',
    builds: [build('a', 1)],
    uploads: [upload(1, 'a', 1, 'p1', 'failed', { stateTime: ago(300) }), upload(2, 'a', 1, 'p1', 'failed', { stateTime: ago(100) })],
    actions: [], target: { failures: 2, retryAt: ago(100) + 120_000 },
  },
  {
    name: 'counts upload failures only after the newest ready upload',
    builds: [build('a', 1), build('a', 2)],
    uploads: [upload(1, 'a', 1, 'p1', 'failed', { stateTime: ago(4000) }), upload(2, 'a', 1), upload(3, 'a', 2, 'p1', 'failed', { stateTime: ago(30) })],
    actions: [{ type: 'delete-upload', uploadId: uid(1), reason: `failed, superseded by upload ${uid(2)}` }],
    target: { failures: 1, retryAt: ago(30) + 60_000 },
  },
  {
    name: 'waits when no builder registers image-upload for the newest build',
    builds: [build('a', 1)], gearman: { [`image-upload:${A1}`]: [] },
    actions: [], target: { waiting: `no builder registers image-upload:${A1}` },
  },
  {
    name: 'starts no upload while gearmand admin is unreachable',
    builds: [build('a', 1)], gearman: null,
    actions: [], target: { waiting: 'gearmand admin not reachable' },
  },
  {
    name: 'uploads the older ready build when the newest is marked lost in the same pass',
    builds: [build('a', 1), build('a', 2)], gearman: { [`image-upload:${A2}`]: [] }, absent: { [A2]: 30 },
    actions: [{ type: 'mark-lost', buildId: A2 }, startUpload(A1)],
  },
  {
    name: 'never uploads a failed or deleting build',
    builds: [build('a', 1), build('a', 2, 'deleting'), build('a', 3, 'failed', { stateTime: ago(30) })],
    uploads: [upload(1, 'a', 1)],
    actions: [{ type: 'delete-build', buildId: A2, reason: 'resuming deletion' }],
  },
]);
