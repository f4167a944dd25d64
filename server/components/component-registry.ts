/**
 * Keeps this server's entries in Nodepool 11's component registry (lib/store/components.ts):
 * one `launcher` component for the process and, while this server runs the image lifecycle
 * (holds its leader lock), one `builder` component per builder host gearmand shows. Pool
 * components come with the pool workers' launcher registrations. Every pass publishes under
 * the current store session, so after the session was replaced the components are made anew
 * within one interval, as Nodepool re-registers after a lost session.
 */
import type { GearmanServerAddress } from '../../lib/gearman/types.js';
import type { Logger } from '../../lib/log.js';
import { PeriodicLoop } from '../../lib/periodic-loop.js';
import type { Store } from '../../lib/store/store.js';
import { fetchRegistrations } from '../image-lifecycle/registrations.js';
import { builderHosts } from './builder-hosts.js';

/** Dependencies of {@link ComponentRegistry}. */
export interface ComponentRegistryDeps {
  store: Store;
  log: Logger;
  /** This host's name (the component carries its short form). */
  hostname: string;
  /** The live store session (a replaced one has a new id). */
  sessionId: () => string;
  /** Where builders are seen, when this server runs an image lifecycle; no builder components otherwise. */
  builders?: {
    servers: () => readonly GearmanServerAddress[];
    /** Whether this server runs the image lifecycle now (one server publishes the builders). */
    isLeader: () => Promise<boolean>;
  };
  /** Between passes (default 30 s). */
  intervalMs?: number;
}

/** The loop that keeps this server's launcher and builder components. */
export class ComponentRegistry {
  private readonly loop: PeriodicLoop;
  private readonly log: Logger;
  /** The builder hosts published last (kept when gearmand did not answer). */
  private builders: string[] = [];
  private stopping: Promise<void> | undefined;

  constructor(private readonly deps: ComponentRegistryDeps) {
    this.log = deps.log.child({ component: 'component-registry' });
    this.loop = new PeriodicLoop({
      name: 'component-registry', log: this.log, intervalMs: () => deps.intervalMs ?? 30_000,
      pass: () => this.pass(), backoff: { initialMs: 1000, maxMs: 10_000 },
    });
  }

  /** Starts the loop; its first pass registers at once. */
  start(): void {
    this.loop.start();
  }

  /** One pass: the launcher component, then the builders (by now's leadership). */
  async pass(): Promise<void> {
    const { store, hostname } = this.deps;
    const session = this.deps.sessionId();
    await store.publishComponents(session, 'launcher', [{ hostname, state: 'running' }]);
    const builders = await this.builderHostsNow();
    if (builders) this.builders = builders;
    await store.publishComponents(session, 'builder', this.builders.map((h) => ({ hostname: h, state: 'running' as const })));
  }

  /** Stops the loop and removes this server's components (they would go with the session anyway). Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.loop.stop();
      const session = this.deps.sessionId();
      for (const kind of ['builder', 'launcher'] as const) {
        await this.deps.store.publishComponents(session, kind, []).catch(() => undefined);
      }
    })();
    return this.stopping;
  }

  /** Builder hosts to publish: none when not the lifecycle's leader; null when gearmand did not all answer. */
  private async builderHostsNow(): Promise<string[] | null> {
    const b = this.deps.builders;
    if (!b || !await b.isLeader()) return [];
    const registered = await fetchRegistrations(b.servers(), this.log);
    return registered ? builderHosts(registered) : null;
  }
}
