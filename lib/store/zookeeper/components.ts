/**
 * Nodepool 11's component registry in ZooKeeper (lib/store/components.ts says what it holds):
 * `/nodepool/components/<kind>/<hostname><seq>`, ephemeral and sequential, created through the
 * store session's own connection so each goes with its session. This handle remembers the
 * znode it made for each pool (launcher id) and each launcher or builder host, and which
 * session made it: a later call with the same session rewrites it in place when its JSON
 * changed; a call under another session (the old one lapsed and was replaced) makes a new one,
 * as Nodepool re-registers after a lost session.
 */
import { ZooKeeperError } from '../../errors.js';
import {
  componentJson, poolComponentJson, shortHostname, type ComponentEntry, type ComponentInfo, type ComponentKind, type ProcessComponentKind,
} from '../components.js';
import type { LauncherRecord } from '../models.js';
import type { ZkContext } from './context.js';
import type { ZkClient } from './zk-client.js';
import { MODE } from './zk-library.js';

/** A component znode this handle made. */
interface Made {
  path: string;
  sessionId: string;
  data: Buffer;
}

const noNode = (err: unknown): boolean => err instanceof ZooKeeperError && err.code === 'NO_NODE';

/** The component registry of one store handle. */
export class ZkComponents {
  /** Launcher id → its pool component. */
  private readonly pools = new Map<string, Made>();
  /** `<kind>/<hostname>` → a launcher or builder component. */
  private readonly processes = new Map<string, Made>();

  /**
   * `sessionClient` gives the live client of a session of this handle (thrown: StoreError
   * otherwise); `hostnameOf` the hostname the session was opened with.
   */
  constructor(
    private readonly ctx: ZkContext,
    private readonly sessionClient: (id: string, what: string) => ZkClient,
    private readonly hostnameOf: (sessionId: string) => string,
    private readonly version: string,
  ) {}

  /** Writes (or refreshes) the pool component of a launcher registration. */
  async registerPool(l: LauncherRecord): Promise<void> {
    const what = `registering the pool component of launcher ${l.id}`;
    const client = this.sessionClient(l.sessionId, what);
    const data = Buffer.from(JSON.stringify(poolComponentJson(l, this.hostnameOf(l.sessionId), this.version)));
    const known = this.pools.get(l.id);
    if (known?.sessionId === l.sessionId && await this.refresh(client, known, data)) return;
    const path = await this.create(client, 'pool', shortHostname(this.hostnameOf(l.sessionId)), data);
    this.pools.set(l.id, { path, sessionId: l.sessionId, data });
    // The one made before (an earlier session of ours, or another process's registration of this id) goes.
    if (known) await this.remove(known.path);
    else await this.removeOtherPools(l.id, path);
  }

  /** Rewrites the pool component of a launcher after an update (nothing when there is none). */
  async updatePool(l: LauncherRecord): Promise<void> {
    const data = Buffer.from(JSON.stringify(poolComponentJson(l, this.hostnameOf(l.sessionId), this.version)));
    const known = this.pools.get(l.id);
    const paths = known ? [known.path] : await this.poolPaths(l.id);
    for (const path of paths) {
      try {
        await this.ctx.main().setData(path, data);
        if (known) known.data = data;
      } catch (err) {
        if (!noNode(err)) throw err;
      }
    }
  }

  /** Removes the pool component of a launcher, wherever it was made. */
  async removePool(id: string): Promise<void> {
    const known = this.pools.get(id);
    this.pools.delete(id);
    for (const path of known ? [known.path] : await this.poolPaths(id)) await this.remove(path);
  }

  /** Makes the session's components of `kind` exactly `infos` (one per short hostname). */
  async publish(sessionId: string, kind: ProcessComponentKind, infos: readonly ComponentInfo[]): Promise<void> {
    const what = `publishing ${kind} components`;
    const client = this.sessionClient(sessionId, what);
    const wanted = new Map(infos.map((i) => {
      const json = componentJson(kind, i, this.version);
      return [`${kind}/${String(json.hostname)}`, { hostname: String(json.hostname), data: Buffer.from(JSON.stringify(json)) }];
    }));
    for (const [key, made] of [...this.processes]) {
      if (!key.startsWith(`${kind}/`) || (wanted.has(key) && made.sessionId === sessionId)) continue;
      // Not wanted any more, or made under an earlier session (then a new one is made below).
      this.processes.delete(key);
      await this.remove(made.path);
    }
    for (const [key, want] of wanted) {
      const known = this.processes.get(key);
      if (known && await this.refresh(client, known, want.data)) continue;
      const path = await this.create(client, kind, want.hostname, want.data);
      this.processes.set(key, { path, sessionId, data: want.data });
    }
  }

  /** Every component of `kind` as stored (unparsable data reads as `{}`), by znode name. */
  async list(kind: ComponentKind): Promise<ComponentEntry[]> {
    const client = this.ctx.main();
    const dir = this.ctx.layout.componentKind(kind);
    const out: ComponentEntry[] = [];
    for (const name of (await client.getChildren(dir) ?? []).sort()) {
      const got = await client.getData(`${dir}/${name}`);
      if (!got) continue;
      out.push({ kind, name, data: parseObject(got.data) });
    }
    return out;
  }

  /** Writes `data` over a znode of ours when it changed; false when the znode is gone. */
  private async refresh(client: ZkClient, made: Made, data: Buffer): Promise<boolean> {
    try {
      if (made.data.equals(data)) return Boolean(await client.exists(made.path));
      await client.setData(made.path, data);
      made.data = data;
      return true;
    } catch (err) {
      if (noNode(err)) return false;
      throw err;
    }
  }

  private async create(client: ZkClient, kind: ComponentKind, hostname: string, data: Buffer): Promise<string> {
    const prefix = `${this.ctx.layout.componentKind(kind)}/${hostname}`;
    let made: string;
    try {
      made = await client.create(prefix, data, MODE.ephemeralSequential);
    } catch (err) {
      if (!noNode(err)) throw err;
      await this.ctx.main().mkdirp(this.ctx.layout.componentKind(kind));
      made = await client.create(prefix, data, MODE.ephemeralSequential);
    }
    this.ctx.wroteElsewhere();
    return made;
  }

  private async remove(path: string): Promise<void> {
    try {
      await this.ctx.main().remove(path);
    } catch (err) {
      if (!noNode(err)) throw err;
    }
  }

  /** Paths of pool components whose JSON names launcher `id`. */
  private async poolPaths(id: string): Promise<string[]> {
    return (await this.list('pool')).filter((e) => e.data.id === id).map((e) => `${this.ctx.layout.componentKind('pool')}/${e.name}`);
  }

  private async removeOtherPools(id: string, keep: string): Promise<void> {
    for (const path of await this.poolPaths(id)) if (path !== keep) await this.remove(path);
  }
}

function parseObject(data: Buffer): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(data.toString('utf8'));
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Record<string, unknown> : {};
  } catch {
    return {};
  }
}
