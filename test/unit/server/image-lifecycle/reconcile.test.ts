import { B1, bid, build, config, table, upload } from './planner-fixtures.js';

const A1 = bid('a', 1);
const A2 = bid('a', 2);
const A7 = bid('a', 7);
/** Four ids the store does not know (a second installation's builds). */
const MANY_IDS = [11, 12, 13, 14].map((n) => bid('a', n));
const MANY_UNKNOWN = Object.fromEntries(MANY_IDS.map((id) => [`image-upload:${id}`, [B1]]));
const HEALTHY = { builds: [build('a', 1)], uploads: [upload(1, 'a', 1)] };
/** a-1's files unadvertised for `seconds`. */
const unadvertised = (seconds: number) => ({ gearman: { [`image-upload:${A1}`]: [] }, absent: { [A1]: seconds } });

table('rule 4: reconciliation with what builders advertise', [
  {
    name: 'marks a ready build lost once nobody advertised it for 3 intervals, and rebuilds',
    ...HEALTHY, ...unadvertised(30),
    actions: [{ type: 'mark-lost', buildId: A1 }, { type: 'start-build', diskimage: 'a', formats: ['qcow2'], reason: 'missing' }],
  },
  {
    name: 'does not mark a build lost before 3 intervals (a builder may be reconnecting)',
    ...HEALTHY, ...unadvertised(29),
    actions: [],
  },
  {
    name: 'does not mark a build lost without a recorded absence',
    ...HEALTHY, gearman: { [`image-upload:${A1}`]: [] },
    actions: [],
  },
  {
    name: 'marks nothing lost while gearmand admin is unreachable',
    ...HEALTHY, gearman: null, absent: { [A1]: 100_000 },
    actions: [],
  },
  {
    name: 'marks a lost build found when a builder advertises it again',
    builds: [build('a', 1, 'lost')], uploads: HEALTHY.uploads, gearman: { [`image-upload:${A1}`]: ['h2:B2'] },
    actions: [{ type: 'mark-found', buildId: A1, holders: ['h2:B2'] }],
  },
  {
    name: 'deletes an advertised id the store does not know once it has stayed unknown for stray-grace',
    ...HEALTHY, gearman: { [`image-upload:${A7}`]: [B1, 'h2:B2'], 'image-upload:zz-0000000003': [B1] },
    unknown: { [A7]: 3600, 'zz-0000000003': 3600 },
    actions: [
      { type: 'delete-stray', imageId: A7, holders: [B1, 'h2:B2'] },
      { type: 'delete-stray', imageId: 'zz-0000000003', holders: [B1] },
    ],
  },
  {
    name: 'deletes the advertised files of a failed build, and only that in this pass',
    builds: [build('a', 1, 'failed'), build('a', 2)], uploads: [upload(1, 'a', 2)], gearman: { [`image-upload:${A1}`]: [B1] },
    actions: [{ type: 'delete-stray', imageId: A1, holders: [B1] }],
  },
  {
    name: 'does not ask again for a stray whose delete is in flight',
    ...HEALTHY, gearman: { [`image-upload:${A7}`]: [B1] }, inFlight: { buildDeletes: [A7] }, unknown: { [A7]: 3600 },
    actions: [],
  },
  {
    name: 'ignores advertised ids that are not image ids, and functions nobody registers',
    ...HEALTHY, gearman: { 'image-upload:../etc': [B1], 'image-upload:a-1': [B1], [`image-upload:${A7}`]: [], 'status': [B1] },
    actions: [],
  },
  {
    name: 'deletes no strays while gearmand admin is unreachable',
    ...HEALTHY, gearman: null, unknown: { [A7]: 3600 },
    actions: [],
  },
  {
    name: 'keeps an unknown id within stray-grace (a second installation\'s, or a record not read yet)',
    ...HEALTHY, gearman: { [`image-upload:${A7}`]: [B1] }, unknown: { [A7]: 3599 },
    actions: [],
  },
  {
    name: 'keeps an unknown id with no recorded first sighting',
    ...HEALTHY, gearman: { [`image-upload:${A7}`]: [B1] },
    actions: [],
  },
  {
    name: 'honours a shorter stray-grace',
    ...HEALTHY, config: config({ lifecycle: { 'stray-grace': 60 } }), gearman: { [`image-upload:${A7}`]: [B1] }, unknown: { [A7]: 60 },
    actions: [{ type: 'delete-stray', imageId: A7, holders: [B1] }],
  },
  {
    name: 'refuses to delete unknown ids when the store has no builds at all (a new or wrong store), however long they wait',
    gearman: { [`image-upload:${A7}`]: [B1] }, unknown: { [A7]: 100_000 },
    actions: [{ type: 'start-build', diskimage: 'a', formats: ['qcow2'], reason: 'missing' }],
    held: [/the store has no records, but 1 image ids builders advertise exist/],
  },
  {
    name: 'refuses to delete unknown ids that are more than 3 and more than half of what builders advertise',
    ...HEALTHY, gearman: MANY_UNKNOWN, unknown: Object.fromEntries(MANY_IDS.map((id) => [id, 100_000])),
    actions: [],
    held: [/4 of 5 image ids builders advertise are unknown to this store/],
  },
  {
    name: 'keeps ids that were there while the store had no builds, after the store has builds of its own and long after the grace',
    ...HEALTHY, gearman: { [`image-upload:${A7}`]: [B1] }, unknown: { [A7]: 100_000 }, suspect: [A7],
    actions: [],
    held: [/1 image ids builders advertise were there before this store had any record of its own/],
  },
  {
    name: 'deletes such ids only when delete-unknown is set',
    ...HEALTHY, config: config({ lifecycle: { 'delete-unknown': true } }), gearman: { [`image-upload:${A7}`]: [B1] }, unknown: { [A7]: 3600 }, suspect: [A7],
    actions: [{ type: 'delete-stray', imageId: A7, holders: [B1] }],
  },
  {
    name: 'deletes them after all when delete-unknown is set',
    ...HEALTHY, config: config({ lifecycle: { 'delete-unknown': true } }), gearman: MANY_UNKNOWN, unknown: Object.fromEntries(MANY_IDS.map((id) => [id, 3600])),
    actions: MANY_IDS.map((imageId) => ({ type: 'delete-stray', imageId, holders: [B1] })),
  },
  {
    name: 'still deletes a failed build\'s files at once while refusing unknown ones',
    builds: [build('a', 1, 'failed'), build('a', 2)], uploads: [upload(1, 'a', 2)],
    gearman: { [`image-upload:${A1}`]: [B1], ...MANY_UNKNOWN }, unknown: Object.fromEntries(MANY_IDS.map((id) => [id, 100_000])),
    actions: [{ type: 'delete-stray', imageId: A1, holders: [B1] }],
    held: [/4 of 6 image ids builders advertise are unknown/],
  },
  {
    name: 'does not treat a deleting build as a stray (retention deletes it)',
    builds: [build('a', 1), build('a', 2, 'deleting')], uploads: HEALTHY.uploads, gearman: { [`image-upload:${A2}`]: [B1] },
    actions: [{ type: 'delete-build', buildId: A2, reason: 'resuming deletion' }],
  },
  {
    name: 'does not treat a building or lost build as a stray',
    builds: [build('a', 1), build('a', 2, 'building')], uploads: HEALTHY.uploads, gearman: { [`image-upload:${A2}`]: [B1] },
    inFlight: { builds: [A2] },
    actions: [],
  },
]);
