/**
 * Request decisions for the static driver: it never launches anything, so a request is served
 * only from pre-registered READY records (no remaining quota → the request waits for a slot).
 * Before a ready node is handed out, one TCP connect checks that its host still answers; a
 * host that does not loses one ready record (marked deleting) and the node is not used.
 */
import type { Logger } from '../../log.js';
import type { TcpProbeResult } from '../../ssh/tcp-probe.js';
import type { NodePatch, NodeRecord, NodeRequestRecord } from '../../store/models.js';
import type { RequestHandler } from '../contract/driver.js';
import type { StaticHost } from './config.js';

/**
 * What {@link StaticRequestHandler} uses of its provider's hosts (the provider implements it
 * and creates the handler, so the import runs from provider to handler only).
 */
export interface StaticHandlerDeps {
  readonly name: string;
  /** The configured host a node record belongs to. */
  hostOf(node: Pick<NodeRecord, 'hostname' | 'connectionPort'>): StaticHost | undefined;
  /** Whether the host answers a TCP connect now. */
  hostAnswers(host: StaticHost): Promise<TcpProbeResult>;
  /** Deregisters one ready record of the node's host; the id deregistered, if any. */
  deregisterOne(node: NodeRecord, reason: string): Promise<string | undefined>;
}

export class StaticRequestHandler implements RequestHandler {
  readonly canLaunch = false;
  readonly aliveCount = 0;

  constructor(
    private readonly provider: StaticHandlerDeps,
    readonly pool: string,
    readonly request: NodeRequestRecord,
    private readonly log: Logger,
  ) {}

  imagesAvailable(): Promise<boolean> {
    return Promise.resolve(true);
  }

  hasProviderQuota(_labels: readonly string[]): Promise<boolean> {
    return Promise.resolve(true);
  }

  /** Nothing can be created: only registered slots serve requests. */
  hasRemainingQuota(_label: string): Promise<boolean> {
    return Promise.resolve(false);
  }

  /** One TCP connect to the node within its host's `timeout` (shared, see hostAnswers); on failure one record of the host is deregistered. */
  async checkReusableNode(node: NodeRecord): Promise<boolean> {
    const host = this.provider.hostOf(node);
    if (!host) return false;
    const probe = await this.provider.hostAnswers(host);
    if (probe.ok) return true;
    const reason = `${host.id}: liveness check failed: ${probe.reason}`;
    const deregistered = await this.provider.deregisterOne(node, reason);
    this.log.warn(reason, { host: host.id, node: node.id, request: this.request.id, deregistered: deregistered ?? null });
    return false;
  }

  nodeMetadata(_label: string): NodePatch {
    return {};
  }

  /** A static node is one instance (as Nodepool's static provider counts it); it has no cores or ram. */
  labelResources(_label: string): Promise<Readonly<Record<string, number>>> {
    return Promise.resolve({ instances: 1 });
  }

  /** Never called: {@link canLaunch} is false. Thrown: always. */
  launch(node: NodeRecord): void {
    throw new Error(`static provider ${this.provider.name} cannot launch node ${node.id}: static nodes are registered, not launched`);
  }

  launchesComplete(): boolean {
    return true;
  }
}
