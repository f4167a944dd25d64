/**
 * The planner and snapshot builds on another diskimage (`snapshot.base-diskimage`): the build
 * boots the newest ready upload (of a build not revoked) of that diskimage to the snapshot's
 * provider, and waits, saying so, while there is none.
 */
import { bid, build, config, NOW, revocation, table, upload } from './planner-fixtures.js';

/** `a` (DIB) and `s`, a snapshot build on `a`'s uploads to p1. */
const cfg = config({
  diskimages: [
    { name: 'a', 'rebuild-age': 86400 },
    { name: 's', 'rebuild-age': 86400, builder: 'snapshot', snapshot: { provider: 'p1', 'base-diskimage': 'a', setup: ['/etc/nodepool/setup.sh'], username: 'debian' } },
  ],
  providers: [{ name: 'p1', cloud: 'c', diskimages: [{ name: 'a' }, { name: 's' }] }],
});
const S_WAITING = 'waiting for a ready upload of base-diskimage a to provider p1';

table('snapshot builds on another diskimage', [
  {
    name: 'waits, saying why, while the base diskimage has no ready upload to the provider',
    config: cfg,
    actions: [{ type: 'start-build', diskimage: 'a', formats: ['qcow2'], reason: 'missing' }],
    diskimageName: 's', diskimage: { waiting: S_WAITING },
  },
  {
    name: 'waits while the base\'s only upload is still uploading',
    config: cfg,
    builds: [build('a', 1)], uploads: [upload(1, 'a', 1, 'p1', 'uploading')], inFlight: { uploads: ['0000000001'] },
    actions: [],
    diskimageName: 's', diskimage: { waiting: S_WAITING },
  },
  {
    name: 'boots the newest ready upload of the base to that provider',
    config: cfg,
    builds: [build('a', 1), build('a', 2)], uploads: [upload(1, 'a', 1), upload(2, 'a', 2)],
    actions: [{ type: 'start-build', diskimage: 's', formats: ['qcow2'], reason: 'missing', baseImage: 'ext-2' }],
    diskimageName: 's', diskimage: { waiting: null },
  },
  {
    name: 'skips an upload of a revoked build of the base',
    config: cfg,
    builds: [build('a', 1), build('a', 2), build('s', 3)], uploads: [upload(1, 'a', 1), upload(2, 'a', 2)], revocations: [revocation('a', 2)],
    requests: [{ diskimage: 's', requested: NOW - 1000 }],
    actions: [
      { type: 'start-build', diskimage: 'a', formats: ['qcow2'], reason: 'revoked' },
      { type: 'start-build', diskimage: 's', formats: ['qcow2'], reason: 'request', servesRequestsUpTo: NOW - 1000, baseImage: 'ext-1' },
      { type: 'start-upload', buildId: bid('s', 3), provider: 'p1', imageName: 's' },
    ],
  },
  {
    name: 'a resumed snapshot build gets the base\'s newest ready upload too',
    config: cfg,
    builds: [build('a', 1), build('s', 2, 'building')], uploads: [upload(1, 'a', 1)],
    actions: [{ type: 'resume-build', buildId: bid('s', 2), baseImage: 'ext-1' }],
  },
]);
