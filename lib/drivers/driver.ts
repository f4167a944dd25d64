/**
 * The driver contract (Nodepool's "Nodepool Drivers" design): a Driver turns a provider's
 * config into a Provider (one per configured provider, recreated when its config changes);
 * the Provider hands out one RequestHandler per node request and pool. The request algorithm
 * itself is generic (server/launcher/request-handler.ts) and calls only these hooks.
 * Every driver passes test/contract/driver.contract.ts.
 */
import type { Config } from '../config/schema.js';
import type { Problems, Schema } from '../config/schema-kit.js';
import type { Logger } from '../log.js';
import type { NodePatch, NodeRecord, NodeRequestRecord } from '../store/models.js';
import type { Store } from '../store/store.js';
import type { ImageService } from './image-service.js';
import type { ImageServiceFactory } from './openstack/image-services.js';

/** What the launcher needs to know about one pool of a provider. */
export interface PoolInfo {
  name: string;
  /** Most nodes the pool may have at once (any state but deleting); 0 disables the pool. */
  maxServers: number;
  /** Labels the pool can serve. */
  labels: readonly string[];
  /** Copied to every new node's `attributes`. */
  nodeAttributes: Readonly<Record<string, string>>;
}

/** The common part of every provider config. */
export interface ProviderConfigBase {
  readonly name: string;
  readonly driver: string;
  /** Most launches in flight for the whole provider (-1: unlimited, 0: handle no requests). */
  readonly maxConcurrency: number;
}

/** What a provider gets from the process that runs it. */
export interface ProviderContext {
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
  /** Cloud API clients from clouds.yaml, for drivers that talk to a cloud. */
  imageServices: ImageServiceFactory;
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
  /** Periodic: removes resources no record knows; static: re-registers missing hosts. */
  cleanupLeakedResources(): Promise<void>;
  /** Called after a node record of this provider was deleted (static re-registers the slot). */
  nodeDeleted(node: NodeRecord): Promise<void>;
  /** Whether the label's prerequisites (an image) exist here; no quota checks. */
  labelReady(label: string): Promise<boolean>;
  /** A handler for one request in one pool. */
  getRequestHandler(pool: string, request: NodeRequestRecord): RequestHandler;
  /** The image API for drivers that manage images (uploads, deletes, alien-image-list). */
  readonly images?: ImageService;
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
   * Starts creating the resource for a locked `building` node. The handler writes the node's
   * outcome to the store: `ready` with its addresses, `failed` with a reason, or `aborted`
   * (over quota: the launcher retries). Never throws.
   */
  launch(node: NodeRecord): void;
  /** True when every launched node reached ready, failed or aborted. */
  launchesComplete(): boolean;
}

/** A driver: its provider schema and how to make providers. */
export interface Driver<C extends ProviderConfigBase = ProviderConfigBase> {
  readonly name: string;
  readonly providerSchema: Schema<C>;
  /** True when the builders build and upload images for this provider. */
  manageImages(config: C): boolean;
  /** The provider's pools as the launcher sees them. */
  pools(config: C): PoolInfo[];
  createProvider(config: C, ctx: ProviderContext): Provider;
  /**
   * Cross-checks against the rest of the file (e.g. a pool label's diskimage). The loader
   * already checks that every pool label is defined in `labels`. `at` is the provider's key path.
   */
  checkReferences?(config: C, known: { labels: ReadonlySet<string>; diskimages: ReadonlySet<string> }, at: string, problems: Problems): void;
}
