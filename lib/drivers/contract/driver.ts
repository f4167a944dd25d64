/**
 * The driver contract (Nodepool's "Nodepool Drivers" design): a Driver turns a provider's
 * config into a Provider (one per configured provider, recreated when its config changes);
 * the Provider hands out one RequestHandler per node request and pool. The request algorithm
 * itself is generic (server/launcher/request-handler.ts) and calls only these hooks.
 * Every driver passes test/contract/driver.contract.ts.
 */
import type { Config } from '../../config/schema.js';
import type { Logger } from '../../log.js';
import type { NodePatch, NodeRecord, NodeRequestRecord } from '../../store/models.js';
import type { Store } from '../../store/store.js';
import type { DriverConfig, PoolInfo, ProviderConfigBase } from './driver-config.js';
import type { DriverHost, HostAccess } from './host-access.js';
import type { BuildInstances } from './build-instance.js';
import type { ImageService } from './image-service.js';

export type { PoolInfo, ProviderConfigBase };

/** What a provider gets from the process that runs it; `A` is its driver's own host access. */
export interface ProviderContext<A extends HostAccess = HostAccess> {
  store: Store;
  log: Logger;
  /** Epoch ms. */
  clock: () => number;
  /** The whole config the provider was created from (labels, diskimages). */
  config: Config;
  /**
   * The live store session locks are taken under: read it at each use, because a session
   * that lapsed is replaced by a new one with another id.
   */
  sessionId: () => string;
  /**
   * The provider's host access, made by its own driver's `hostAccess` from this process's
   * settings and shared with the provider's image service (lib/drivers/core/driver-hosts.ts);
   * absent for drivers without one (static). Rejected when the access cannot be made (credentials).
   */
  hostAccess?: () => Promise<A>;
  /** Told of leaked resources the provider found and took over for deletion (metrics). */
  onLeak?: (resource: string, count: number) => void;
}

/** A resource as the provider sees it: what leak detection and `info` compare with node records. */
export interface ExternalNode {
  externalId: string;
  name: string;
  /** From the resource's metadata; null when it carries none (not ours). */
  provider: string | null;
  nodeId: string | null;
  /** The provider's own status word (e.g. Nova's ACTIVE). */
  status: string;
}

/** One configured provider at run time. */
export interface Provider {
  readonly name: string;
  /** Starts background work (static: registers hosts). Called once after creation. */
  start(): Promise<void>;
  /** Stops taking work; launches in flight are abandoned to the cleanup. Idempotent. */
  stop(): Promise<void>;
  /** Resources in the provider (cloud servers; static: registered hosts). */
  listNodes(): Promise<ExternalNode[]>;
  /**
   * Deletes (cloud) or gives back (static) the node's resource and resolves once it is gone.
   * A resource that is already gone is not an error.
   */
  cleanupNode(node: NodeRecord): Promise<void>;
  /**
   * True when cleanupNode has nothing to delete (static: the host stays): the deleter then
   * removes the record without marking it `deleting` first (nothing can be left half-deleted),
   * in one store step without taking its lock when nobody holds it (Store.deleteNodeIfIdle;
   * cleanupNode is then not called), and tells nodeDeleted.
   */
  readonly cleanupFree?: boolean;
  /** Periodic: removes resources no record knows; static: re-registers missing hosts. */
  cleanupLeakedResources(): Promise<void>;
  /** Called only after a node record of this provider was deleted (static re-registers the slot without reading it again). */
  nodeDeleted(node: NodeRecord): Promise<void>;
  /** Whether the label's prerequisites (an image) exist here; no quota checks. */
  labelReady(label: string): Promise<boolean>;
  /** A handler for one request in one pool. */
  getRequestHandler(pool: string, request: NodeRequestRecord): RequestHandler;
  /** The image API for drivers that manage images (uploads, deletes, alien-image-list). */
  readonly images?: ImageService;
  /** The provider's own resource limits (a cloud's quota: cores, ram, instances; unlimited ones left out), for metrics. */
  resourceLimits?(): Promise<Readonly<Record<string, number>>>;
}

/**
 * Driver decisions for one request in one pool. The generic algorithm asks, in order:
 * imagesAvailable → hasProviderQuota (else decline), then per missing node: reuse a ready
 * node (checkReusableNode) or, if canLaunch and hasRemainingQuota, create and launch one.
 */
export interface RequestHandler {
  /** False for drivers that only hand out pre-registered nodes (static). */
  readonly canLaunch: boolean;
  /** Launches of this handler still running. */
  readonly aliveCount: number;
  /** Images for every requested label exist in this provider. */
  imagesAvailable(): Promise<boolean>;
  /** Could the whole request ever fit (pool limits, cloud quota); false → decline. */
  hasProviderQuota(labels: readonly string[]): Promise<boolean>;
  /** Is there room for one more node of `label` now; false → pause. */
  hasRemainingQuota(label: string): Promise<boolean>;
  /** May this ready node be handed out (static: the host still answers). */
  checkReusableNode(node: NodeRecord): Promise<boolean>;
  /** Driver fields for a node about to be created (az, cloud, region). */
  nodeMetadata(label: string): NodePatch;
  /**
   * The resources one node of `label` takes in this pool (Nodepool's quotaNeededByLabel), for
   * `tenant-resource-limits`; undefined when unknown. Absent: the request is not limited.
   */
  labelResources?(label: string): Promise<Readonly<Record<string, number>> | undefined>;
  /**
   * Starts creating the resource for a locked `building` node. The handler writes the node's
   * outcome to the store: `ready` with its addresses, `failed` with a reason, or `aborted`
   * (over quota: the launcher retries). Never throws.
   */
  launch(node: NodeRecord): void;
  /** True when every launched node reached ready, failed or aborted. */
  launchesComplete(): boolean;
}

/**
 * A driver: its config part (driver-config.ts) joined with how to make its host access,
 * providers and image services. `A` is the driver's own host access (credentials, sessions);
 * core passes it through without looking inside.
 */
export interface Driver<C extends ProviderConfigBase = ProviderConfigBase, A extends HostAccess = HostAccess> extends DriverConfig<C> {
  /**
   * The top-level settings (keys of the loaded config) the driver's host access reads, e.g.
   * the openstack driver's credentials file; core hands over exactly these as `DriverHost.settings`.
   */
  readonly hostSettings?: readonly string[];
  /**
   * The driver's access to the provider's cloud from the host's settings: made once per
   * provider config and settings, shared by the provider and its image service, closed once.
   * Absent for a driver that needs none (static). Thrown (rejected): CloudError (credentials).
   */
  hostAccess?(config: C, host: DriverHost): Promise<A>;
  createProvider(config: C, ctx: ProviderContext<A>): Provider;
  /**
   * The image capability's runtime side, for drivers with `imageTargets`: the provider's image
   * service over the driver's host access (undefined for a driver without `hostAccess`).
   */
  imageService?(config: C, access: A | undefined, log: Logger): ImageService;
  /**
   * The build-instance capability (build-instance.ts), for drivers whose config part says
   * `snapshotBuilds`: the provider's build instances on the builder's host, over its host access.
   */
  buildInstances?(config: C, access: A | undefined, log: Logger): BuildInstances;
}
