/**
 * Image data export and import for the SQLite store (see lib/store/image-data.ts). The export
 * reads in one transaction, so it is one consistent snapshot while the server writes; the
 * import runs in one BEGIN IMMEDIATE transaction, so it lands whole or not at all.
 */
import type Database from 'better-sqlite3';
import { CorruptLog } from '../corrupt.js';
import {
  buildIdSequence, findImportConflict, withoutOrphanUploads, IMAGE_DATA_FORMAT, IMAGE_DATA_VERSION, rolloutCounts,
  uploadIdSequence, uploadRetryCounts, withRollout, withUploadRetries, type ImageData, type ImportCounts, type ImportTarget,
} from '../image-data.js';
import { parseImageData } from '../image-data-check.js';
import type { BuildRecord, BuildRequest, UploadRecord, UploadRetryRequest } from '../models.js';
import { toJson } from '../to-json.js';
import { checkedRows, toJsonOrNull } from './columns.js';
import {
  buildFromRow, imageFieldsValue, pauseFromRowLenient, uploadFromRow, WHOLE_DISKIMAGE, type BuildRow, type PauseRow, type UploadRow,
} from './image-rows.js';
import { pinFromRow, revocationFromRowLenient, type PinRow, type RevocationRow } from './rollout-rows.js';
import { buildSequence, UPLOAD_SEQUENCE } from './sequences.js';
import { immediate, type SqlValue } from './statements.js';

const BUILD_SEQUENCE_PREFIX = buildSequence('');

/** Image data of a SQLite database. */
export class SqliteImageData {
  private readonly exportTx: () => ImageData;
  private readonly importTx: (data: ImageData) => ImportCounts;
  private readonly hasBuildStmt: Database.Statement<[string], number>;
  private readonly hasUploadStmt: Database.Statement<[string], number>;
  private readonly maxBuildStmt: Database.Statement<[string], string | null>;
  private readonly maxUploadStmt: Database.Statement<[], string | null>;
  private readonly sequenceStmt: Database.Statement<[string], number>;
  private readonly raiseSequenceStmt: Database.Statement<[string, number]>;
  private readonly insertBuildStmt: Database.Statement<SqlValue[]>;
  private readonly insertUploadStmt: Database.Statement<SqlValue[]>;
  private readonly insertPauseStmt: Database.Statement<SqlValue[]>;
  private readonly insertRequestStmt: Database.Statement<SqlValue[]>;
  private readonly insertPinStmt: Database.Statement<SqlValue[]>;
  private readonly insertRevocationStmt: Database.Statement<SqlValue[]>;
  private readonly insertRetryStmt: Database.Statement<SqlValue[]>;
  private readonly allRetriesStmt: Database.Statement<[], UploadRetryRequest>;
  private readonly allPinsStmt: Database.Statement<[], PinRow>;
  private readonly allRevocationsStmt: Database.Statement<[], RevocationRow>;
  private readonly allBuildsStmt: Database.Statement<[], BuildRow>;
  private readonly allUploadsStmt: Database.Statement<[], UploadRow>;
  private readonly allPausesStmt: Database.Statement<[], PauseRow>;
  private readonly allRequestsStmt: Database.Statement<[], BuildRequest>;
  private readonly allSequencesStmt: Database.Statement<[], { name: string; value: number }>;

  constructor(db: Database.Database, private readonly clock: () => number) {
    this.allBuildsStmt = db.prepare<[], BuildRow>('SELECT * FROM builds ORDER BY diskimage, id');
    this.allUploadsStmt = db.prepare<[], UploadRow>('SELECT * FROM uploads ORDER BY diskimage, provider, id');
    this.allPausesStmt = db.prepare<[], PauseRow>('SELECT * FROM pauses ORDER BY diskimage, provider');
    this.allRequestsStmt = db.prepare<[], BuildRequest>('SELECT diskimage, requested FROM build_requests ORDER BY diskimage');
    this.allPinsStmt = db.prepare<[], PinRow>('SELECT * FROM pins ORDER BY diskimage, provider');
    this.allRevocationsStmt = db.prepare<[], RevocationRow>('SELECT * FROM revocations ORDER BY diskimage, build_id');
    this.allRetriesStmt = db.prepare<[], UploadRetryRequest>('SELECT diskimage, provider, requested FROM upload_retries ORDER BY diskimage, provider');
    this.allSequencesStmt = db.prepare<[], { name: string; value: number }>('SELECT name, value FROM sequences ORDER BY name');
    this.hasBuildStmt = db.prepare<[string], number>('SELECT 1 FROM builds WHERE id = ?').pluck();
    this.hasUploadStmt = db.prepare<[string], number>('SELECT 1 FROM uploads WHERE id = ?').pluck();
    // Ids are zero-padded to a fixed width, so the largest id has the largest sequence.
    this.maxBuildStmt = db.prepare<[string], string | null>('SELECT max(id) FROM builds WHERE diskimage = ?').pluck();
    this.maxUploadStmt = db.prepare<[], string | null>('SELECT max(id) FROM uploads').pluck();
    this.sequenceStmt = db.prepare<[string], number>('SELECT value FROM sequences WHERE name = ?').pluck();
    this.raiseSequenceStmt = db.prepare<[string, number]>(`
      INSERT INTO sequences (name, value) VALUES (?, ?)
      ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)`);
    this.insertBuildStmt = db.prepare<SqlValue[]>(`
      INSERT INTO builds (id, diskimage, state, state_time, created, builder_hostname, builder_id, formats, files, reason, progress, image_fields)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.insertUploadStmt = db.prepare<SqlValue[]>(`
      INSERT INTO uploads (id, build_id, diskimage, provider, image_name, state, state_time, created,
                           external_id, external_name, format, reason, progress, image_fields,
                           launches, launch_failures, rollout_state, rollout_time, rollout_reason)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.insertPauseStmt = db.prepare<SqlValue[]>(`
      INSERT INTO pauses (diskimage, provider, since, reason) VALUES (?, ?, ?, ?)
      ON CONFLICT (diskimage, provider) DO NOTHING`);
    this.insertRequestStmt = db.prepare<SqlValue[]>(`
      INSERT INTO build_requests (diskimage, requested) VALUES (?, ?)
      ON CONFLICT (diskimage) DO NOTHING`);
    this.insertPinStmt = db.prepare<SqlValue[]>(`
      INSERT INTO pins (diskimage, provider, build_id, since, reason) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (diskimage, provider) DO NOTHING`);
    this.insertRevocationStmt = db.prepare<SqlValue[]>(`
      INSERT INTO revocations (diskimage, build_id, since, reason) VALUES (?, ?, ?, ?)
      ON CONFLICT (diskimage, build_id) DO NOTHING`);
    this.insertRetryStmt = db.prepare<SqlValue[]>(`
      INSERT INTO upload_retries (diskimage, provider, requested) VALUES (?, ?, ?)
      ON CONFLICT (diskimage, provider) DO NOTHING`);
    // A deferred transaction of reads: one snapshot under WAL, without blocking writers.
    this.exportTx = db.transaction(() => this.exportNow());
    this.importTx = immediate(db, (data: ImageData) => this.importNow(data));
  }

  /** Every image record and the build and upload sequences, as one snapshot. */
  export(): ImageData {
    return this.exportTx();
  }

  /**
   * Validates `data` and writes it, all or nothing.
   * Thrown: InvalidImageDataError, ImageDataConflictError (nothing written).
   */
  import(data: ImageData): ImportCounts {
    const checked = parseImageData(data);
    return this.importTx(checked);
  }

  private exportNow(): ImageData {
    // Corrupt records are left out (the CLI names them); a corrupt pause is kept as a pause.
    const quiet = new CorruptLog(undefined);
    const builds = checkedRows(this.allBuildsStmt.all(), buildFromRow, quiet);
    const uploads = withoutOrphanUploads(builds, checkedRows(this.allUploadsStmt.all(), uploadFromRow, quiet));
    const pauses = this.allPausesStmt.all().map((r) => pauseFromRowLenient(r).pause);
    const buildRequests = this.allRequestsStmt.all().filter((r) => typeof r.requested === 'number').map((r) => ({ diskimage: r.diskimage, requested: r.requested }));
    const rows = this.allSequencesStmt.all();
    const build: Record<string, number> = {};
    let upload = 0;
    for (const r of rows) {
      if (r.name === UPLOAD_SEQUENCE) upload = r.value;
      else if (r.name.startsWith(BUILD_SEQUENCE_PREFIX)) build[r.name.slice(BUILD_SEQUENCE_PREFIX.length)] = r.value;
    }
    // A sequence is never behind its records; should a hand-edited database say otherwise,
    // the export still lets no id be handed out twice.
    for (const b of builds) build[b.diskimage] = Math.max(build[b.diskimage] ?? 0, buildIdSequence(b.id));
    for (const u of uploads) upload = Math.max(upload, uploadIdSequence(u.id));
    // A corrupt pin is left out (which build it pins cannot be told); a corrupt revocation still revokes.
    const pins = checkedRows(this.allPinsStmt.all(), pinFromRow, quiet);
    const revocations = this.allRevocationsStmt.all().map((r) => revocationFromRowLenient(r).revocation);
    // A corrupt retry request is left out (listCorrupt names it), as a corrupt build request.
    const retries = this.allRetriesStmt.all().filter((r) => typeof r.requested === 'number' && Number.isFinite(r.requested))
      .map((r) => ({ diskimage: r.diskimage, provider: r.provider, requested: r.requested }));
    return withUploadRetries(withRollout({
      format: IMAGE_DATA_FORMAT, version: IMAGE_DATA_VERSION, exported: this.clock(),
      builds, uploads, pauses, buildRequests, sequences: { build, upload },
    } as ImageData, pins, revocations), retries);
  }

  private importNow(data: ImageData): ImportCounts {
    const target: ImportTarget = {
      hasBuild: (id) => this.hasBuildStmt.get(id) !== undefined,
      hasUpload: (id) => this.hasUploadStmt.get(id) !== undefined,
      maxBuildSequence: (diskimage) => {
        const id = this.maxBuildStmt.get(diskimage);
        return id ? buildIdSequence(id) : 0;
      },
      maxUploadSequence: () => {
        const id = this.maxUploadStmt.get();
        return id ? uploadIdSequence(id) : 0;
      },
    };
    const conflict = findImportConflict(data, target);
    if (conflict) throw conflict;
    const counts: ImportCounts = { builds: 0, uploads: 0, pauses: 0, buildRequests: 0, pausesKept: 0, buildRequestsKept: 0, sequencesRaised: 0 };
    for (const b of data.builds) counts.builds += this.insertBuild(b);
    for (const u of data.uploads) counts.uploads += this.insertUpload(u);
    for (const p of data.pauses) {
      const added = this.insertPauseStmt.run(p.diskimage, p.provider ?? WHOLE_DISKIMAGE, p.since, p.reason).changes;
      if (added > 0) counts.pauses++;
      else counts.pausesKept++;
    }
    for (const r of data.buildRequests) {
      if (this.insertRequestStmt.run(r.diskimage, r.requested).changes > 0) counts.buildRequests++;
      else counts.buildRequestsKept++;
    }
    let pins = 0;
    for (const p of data.pins ?? []) pins += this.insertPinStmt.run(p.diskimage, p.provider ?? WHOLE_DISKIMAGE, p.buildId, p.since, p.reason).changes;
    let revocations = 0;
    for (const r of data.revocations ?? []) revocations += this.insertRevocationStmt.run(r.diskimage, r.buildId, r.since, r.reason).changes;
    Object.assign(counts, rolloutCounts(data, pins, revocations));
    let retries = 0;
    for (const r of data.uploadRetries ?? []) retries += this.insertRetryStmt.run(r.diskimage, r.provider, r.requested).changes;
    Object.assign(counts, uploadRetryCounts(data, retries));
    const sequences: Array<[string, number]> = [
      ...Object.entries(data.sequences.build).map(([d, n]): [string, number] => [buildSequence(d), n]),
      [UPLOAD_SEQUENCE, data.sequences.upload],
    ];
    for (const [name, value] of sequences) {
      if ((this.sequenceStmt.get(name) ?? 0) >= value) continue;
      this.raiseSequenceStmt.run(name, value);
      counts.sequencesRaised++;
    }
    return counts;
  }

  private insertBuild(b: BuildRecord): number {
    const what = `build ${b.id}`;
    return this.insertBuildStmt.run(b.id, b.diskimage, b.state, b.stateTime, b.created, b.builderHostname, b.builderId,
      toJson(b.formats, `${what} formats`), toJson(b.files, `${what} files`), b.reason, toJsonOrNull(b.progress, `${what} progress`), imageFieldsValue(b, what)).changes;
  }

  private insertUpload(u: UploadRecord): number {
    return this.insertUploadStmt.run(u.id, u.buildId, u.diskimage, u.provider, u.imageName, u.state, u.stateTime, u.created,
      u.externalId, u.externalName, u.format, u.reason, toJsonOrNull(u.progress, `upload ${u.id} progress`), imageFieldsValue(u, `upload ${u.id}`),
      u.launches ?? 0, u.launchFailures ?? 0, u.rollout?.state ?? null, u.rollout?.time ?? null, u.rollout?.reason ?? null).changes;
  }
}
