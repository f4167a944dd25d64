/**
 * Spoiling stored records the way a bug, a half-written file or another ZooKeeper client
 * would: straight into a ZooKeeper tree or a SQLite file, past the store's own checks. The
 * store contract's corrupt-record cases and the corrupt-records fault suite use these.
 */
import Database from 'better-sqlite3';
import type { Layout } from '../../lib/store/zookeeper/layout.js';
import { ReadCounter, ZkClient } from '../../lib/store/zookeeper/zk-client.js';

/** What to spoil; uploads name their build and provider (where ZooKeeper keeps them). */
export type SpoilTarget =
  | { kind: 'build'; id: string }
  | { kind: 'upload'; id: string; buildId: string; provider: string }
  | { kind: 'node'; id: string }
  | { kind: 'request'; id: string }
  | { kind: 'pause'; diskimage: string; provider: string | null }
  | { kind: 'pin'; diskimage: string; provider: string | null }
  | { kind: 'revocation'; diskimage: string; buildId: string }
  | { kind: 'upload-retry'; diskimage: string; provider: string }
  | { kind: 'audit'; id: string };

/** Targets whose only checked field is a time (`since`; an upload retry request's `requested`). */
const sinceOnly = (t: SpoilTarget): boolean => t.kind === 'pause' || t.kind === 'pin' || t.kind === 'revocation' || t.kind === 'upload-retry';
const timeField = (t: SpoilTarget): string => (t.kind === 'upload-retry' ? 'requested' : 'since');

/**
 * How: `garbage` (data that is not JSON: `{"state": "ready", garbage`), `unknown-state` (a
 * state no version knows), `no-time` (the record's times removed, or not numbers).
 */
export type SpoilHow = 'garbage' | 'unknown-state' | 'no-time';

/** Spoils one record. */
export type Spoil = (target: SpoilTarget, how: SpoilHow) => Promise<void>;

/** The text the issue found in a build record. */
export const GARBAGE = '{"state": "ready", garbage';

const splitBuild = (id: string): { diskimage: string; seq: string } => ({ diskimage: id.slice(0, -11), seq: id.slice(-10) });

/** The znode of a target. */
function zkPath(layout: Layout, t: SpoilTarget): string {
  switch (t.kind) {
    case 'build': { const b = splitBuild(t.id); return layout.build(b.diskimage, b.seq); }
    case 'upload': { const b = splitBuild(t.buildId); return `${layout.providerImages(b.diskimage, b.seq, t.provider)}/${t.id}`; }
    case 'node': return layout.node(t.id);
    case 'request': return layout.request(t.id);
    case 'pause': return t.provider === null ? layout.pause(t.diskimage) : layout.providerPause(t.diskimage, t.provider);
    case 'pin': return t.provider === null ? layout.pin(t.diskimage) : layout.providerPin(t.diskimage, t.provider);
    case 'revocation': return layout.revocation(t.diskimage, t.buildId);
    case 'upload-retry': return layout.uploadRetry(t.diskimage, t.provider);
    case 'audit': return `${layout.audit}/${t.id}`;
  }
}

/** A spoiler for the ZooKeeper tree of `layout` on `hosts` (its own connection, closed after each use). */
export function zkSpoiler(hosts: string, layout: Layout): Spoil {
  return async (target, how) => {
    const client = await ZkClient.connect({ hosts, sessionTimeoutMs: 10_000, reads: new ReadCounter() });
    try {
      const path = zkPath(layout, target);
      let data: Buffer;
      if (how === 'garbage') {
        data = Buffer.from(GARBAGE);
      } else {
        const got = await client.getData(path);
        if (!got) throw new Error(`${path} does not exist`);
        const j = JSON.parse(got.data.toString('utf8') || '{}') as Record<string, unknown>;
        if (target.kind === 'audit') { if (how === 'unknown-state') j.result = 'exploded'; else delete j.time; } // an audit entry's state is its result
        else if (how === 'unknown-state') j.state = 'exploded';
        else if (sinceOnly(target)) j[timeField(target)] = 'yesterday';
        else { delete j.created_time; delete j.state_time; }
        data = Buffer.from(JSON.stringify(j));
      }
      await client.setData(path, data);
    } finally {
      await client.close();
    }
  };
}

/** A spoiler for the SQLite store in `file` (its own connection). */
export function sqliteSpoiler(file: string): Spoil {
  return async (target, how) => {
    const db = new Database(file, { timeout: 5000 });
    try {
      if (target.kind === 'audit') {
        // No JSON column: its result (an audit entry's state) or its time is spoiled.
        const set = how === 'no-time' ? "time = 'never'" : "result = 'exploded'";
        if (db.prepare(`UPDATE audit SET ${set} WHERE id = ?`).run(target.id).changes !== 1) throw new Error('no audit row to spoil');
        return;
      }
      const table = {
        build: 'builds', upload: 'uploads', node: 'nodes', request: 'node_requests', pause: 'pauses', pin: 'pins', revocation: 'revocations', 'upload-retry': 'upload_retries',
      }[target.kind];
      const [where, key] = target.kind === 'pause' || target.kind === 'pin' || target.kind === 'upload-retry' ? ['diskimage = ? AND provider = ?', [target.diskimage, target.provider ?? '']]
        : target.kind === 'revocation' ? ['diskimage = ? AND build_id = ?', [target.diskimage, target.buildId]]
          : ['id = ?', [target.id]];
      const column = sinceOnly(target) ? timeField(target)
        : how === 'unknown-state' ? 'state'
          : how === 'no-time' ? 'created'
            : { build: 'files', upload: 'progress', node: 'labels', request: 'labels' }[target.kind as 'build' | 'upload' | 'node' | 'request'];
      const value = how === 'unknown-state' ? 'exploded' : how === 'no-time' ? 'never' : GARBAGE;
      // Pause, pin, revocation and upload retry rows have no JSON column: only their time can be spoiled.
      const set = sinceOnly(target) ? `${column} = 'never'` : `${column} = ?`;
      const params = set.endsWith('?') ? [value, ...key] : key;
      const changed = db.prepare(`UPDATE ${table} SET ${set} WHERE ${where}`).run(...params).changes;
      if (changed !== 1) throw new Error(`no ${target.kind} row to spoil`);
    } finally {
      db.close();
    }
  };
}

/** A new corrupt record to write where none was: a build of `diskimage`, a node, a node request. */
export type PlantTarget =
  | { kind: 'build'; diskimage: string; seq: string }
  | { kind: 'node'; id: string }
  | { kind: 'request'; id: string };

/** Writes a new corrupt record (garbage data in ZooKeeper, an unknown state in SQLite). */
export type Plant = (target: PlantTarget) => Promise<void>;

/** A planter for the ZooKeeper tree of `layout` on `hosts` (parents made as needed). */
export function zkPlanter(hosts: string, layout: Layout): Plant {
  return async (t) => {
    const client = await ZkClient.connect({ hosts, sessionTimeoutMs: 10_000, reads: new ReadCounter() });
    try {
      const path = t.kind === 'build' ? layout.build(t.diskimage, t.seq) : t.kind === 'node' ? layout.node(t.id) : layout.request(t.id);
      await client.mkdirp(path.slice(0, path.lastIndexOf('/')));
      await client.create(path, Buffer.from(GARBAGE));
    } finally {
      await client.close();
    }
  };
}

/** A planter for the SQLite store in `file`: rows in a state no version knows. */
export function sqlitePlanter(file: string): Plant {
  return async (t) => {
    const db = new Database(file, { timeout: 5000 });
    try {
      const now = Date.now();
      if (t.kind === 'build') {
        db.prepare(`INSERT INTO builds (id, diskimage, state, state_time, created, formats, files) VALUES (?, ?, 'exploded', ?, ?, '[]', '[]')`)
          .run(`${t.diskimage}-${t.seq}`, t.diskimage, now, now);
      } else if (t.kind === 'node') {
        db.prepare(`INSERT INTO nodes (id, state, state_time, created, provider, pool, labels, connection_type, connection_port, host_keys, attributes)
          VALUES (?, 'exploded', ?, ?, 'p', 'main', '["small"]', 'ssh', 22, '[]', '{}')`).run(t.id, now, now);
      } else {
        db.prepare(`INSERT INTO node_requests (id, priority, state, state_time, created, labels, requestor, reuse, declined_by, nodes)
          VALUES (?, ?, 'requested', ?, ?, ?, 'zuul', 1, '[]', '[]')`).run(t.id, Number(t.id.slice(0, 3)), now, now, GARBAGE);
      }
    } finally {
      db.close();
    }
  };
}
