/**
 * The write operations of a ZooKeeper image data import (image-data.ts), pure: the creates of
 * the records, parents before children, and their cut into transactions ZooKeeper accepts
 * (one multi() is capped at jute.maxbuffer, 1 MB by default).
 */
import { StoreError } from '../../errors.js';
import { UPLOAD_ID_RE, uploadNodeName } from '../../images/image-file.js';
import type { ImageData } from '../image-data.js';
import type { BuildRequest, PauseRecord, PinRecord, RevocationRecord, UploadRecord, UploadRetryRequest } from '../models.js';
import { splitBuildId } from './builds.js';
import { buildJson, pauseJson, uploadJson } from './image-records.js';
import type { Layout } from './layout.js';
import { encode, toSeconds } from './records.js';
import { pinJson, revocationJson } from './rollout-records.js';
import type { Op } from './zk-library.js';

/** Bytes of one write transaction (paths + data + per-op overhead), well under jute.maxbuffer (1 MiB). */
export const MAX_BATCH_BYTES = 512 * 1024;
/** Operations of one write transaction. */
export const MAX_BATCH_OPS = 1000;
/** Estimated framing of one create op besides its path and data (header, ACL, mode). */
const OP_OVERHEAD = 64;

/** The records an import creates (pauses, requests, pins and revocations: those the target does not have). */
export interface ImportRecords {
  data: ImageData;
  pauses: PauseRecord[];
  requests: BuildRequest[];
  pins: PinRecord[];
  revocations: RevocationRecord[];
  /** Upload retry requests (issue 31 §12). */
  retries?: UploadRetryRequest[];
}

/** The creates of the records, parents before children (builds, their upload tree; pauses; requests; pins; revocations). */
export function recordOps(layout: Layout, r: ImportRecords): Op[] {
  const ops: Op[] = [];
  const uploadsOf = new Map<string, UploadRecord[]>();
  for (const u of r.data.uploads) {
    const list = uploadsOf.get(u.buildId) ?? [];
    list.push(u);
    uploadsOf.set(u.buildId, list);
  }
  for (const b of r.data.builds) {
    const seq = splitBuildId(b.id)?.seq;
    if (seq === undefined) throw new StoreError(`build id ${b.id} cannot be stored in ZooKeeper`);
    ops.push({ op: 'create', path: layout.build(b.diskimage, seq), data: encode(buildJson(b), `build ${b.id}`) });
    const uploads = uploadsOf.get(b.id) ?? [];
    if (uploads.length === 0) continue;
    ops.push({ op: 'create', path: layout.providers(b.diskimage, seq) });
    const providers = [...new Set(uploads.map((u) => u.provider))].sort();
    for (const p of providers) {
      ops.push({ op: 'create', path: layout.provider(b.diskimage, seq, p) });
      ops.push({ op: 'create', path: layout.providerImages(b.diskimage, seq, p) });
      for (const u of uploads) {
        if (u.provider !== p) continue;
        if (!UPLOAD_ID_RE.test(u.id)) throw new StoreError(`upload id ${u.id} cannot be stored in ZooKeeper`);
        ops.push({ op: 'create', path: layout.upload(b.diskimage, seq, p, uploadNodeName(u.id)), data: encode(uploadJson(u), `upload ${u.id}`) });
      }
    }
  }
  for (const p of r.pauses) {
    const path = p.provider === null ? layout.pause(p.diskimage) : layout.providerPause(p.diskimage, p.provider);
    ops.push({ op: 'create', path, data: encode(pauseJson({ since: p.since, reason: p.reason }), `pause of ${p.diskimage}`) });
  }
  for (const q of r.requests) {
    ops.push({ op: 'create', path: layout.requestBuild(q.diskimage), data: encode({ requested: toSeconds(q.requested) }, `build request of ${q.diskimage}`) });
  }
  for (const p of r.pins) {
    const path = p.provider === null ? layout.pin(p.diskimage) : layout.providerPin(p.diskimage, p.provider);
    ops.push({ op: 'create', path, data: encode(pinJson(p), `pin of ${p.diskimage}`) });
  }
  for (const v of r.revocations) {
    ops.push({ op: 'create', path: layout.revocation(v.diskimage, v.buildId), data: encode(revocationJson(v), `revocation of ${v.buildId}`) });
  }
  for (const q of r.retries ?? []) {
    ops.push({ op: 'create', path: layout.uploadRetry(q.diskimage, q.provider), data: encode({ requested: toSeconds(q.requested) }, `upload retry request of ${q.diskimage} on ${q.provider}`) });
  }
  return ops;
}

/** `ops` cut into transactions of at most `limit` bytes and MAX_BATCH_OPS ops, in order. Thrown: StoreError for one op past the bound. */
export function batches(ops: Op[], limit = MAX_BATCH_BYTES): Op[][] {
  const out: Op[][] = [];
  let cur: Op[] = [];
  let bytes = 0;
  for (const o of ops) {
    const size = Buffer.byteLength(o.path) + (o.op === 'create' ? o.data?.length ?? 0 : 0) + OP_OVERHEAD;
    if (size > limit) throw new StoreError(`importing image data: ${o.path} would take ${size} bytes, past the ${limit} bytes one ZooKeeper transaction may carry here`);
    if (cur.length > 0 && (bytes + size > limit || cur.length >= MAX_BATCH_OPS)) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(o);
    bytes += size;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}
