/**
 * Where the ZooKeeper store keeps things: Nodepool's tree (`/nodepool/images`, `/nodepool/nodes`,
 * `/nodepool/requests`, `/nodepool/requests-lock`, `/nodepool/launchers`, `/nodepool/components`) under the configured
 * chroot, plus this project's own paths beside it (`sessions`, `sequences`, `status`, `locks`,
 * per-provider pauses, and the rollout intents of issue 24: pins and revocations under each
 * diskimage; issue 25's `audit` trail and upload retry requests under each diskimage), which
 * Nodepool's readers never look at.
 */
import { StoreError } from '../../errors.js';
import { NODE_LOCK_PREFIX, REQUEST_LOCK_PREFIX } from '../lock-names.js';

/** Children of a lock path are named `<uuid hex>__lock__<10-digit sequence>` (kazoo's Lock). */
export const LOCK_NODE_MARK = '__lock__';

/** The name of the lock directory under builds, upload dirs and nodes (never a record). */
export const LOCK_DIR = 'lock';

/** A 10-digit sequence name. */
export const SEQ_RE = /^\d{10}$/;

/** A request id: `<priority>-<10-digit sequence>`. */
export const REQUEST_ID_RE = /^(\d{3})-(\d{10})$/;

/** A path segment that is safe as it is (no `/`, not `.` or `..`, not empty). Thrown: StoreError. */
export function segment(name: string, what: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw new StoreError(`${what} ${JSON.stringify(name)} cannot be a ZooKeeper path segment`);
  }
  return name;
}

/** Paths of the store under one chroot. */
export class Layout {
  /** `<chroot>/nodepool`. */
  readonly root: string;
  readonly images: string;
  readonly nodes: string;
  readonly requests: string;
  readonly requestsLock: string;
  readonly launchers: string;
  /** Nodepool 11's component registry (made when the first component is written). */
  readonly components: string;
  readonly sessions: string;
  readonly sequences: string;
  readonly status: string;
  readonly locks: string;
  /** This project's audit trail of web writes (issue 25): `audit/<10-digit id>`, made at the first entry. */
  readonly audit: string;

  /** `chroot` is '' or an absolute path without a trailing slash. */
  constructor(readonly chroot: string) {
    this.root = `${chroot}/nodepool`;
    this.images = `${this.root}/images`;
    this.nodes = `${this.root}/nodes`;
    this.requests = `${this.root}/requests`;
    this.requestsLock = `${this.root}/requests-lock`;
    this.launchers = `${this.root}/launchers`;
    this.components = `${this.root}/components`;
    this.sessions = `${this.root}/sessions`;
    this.sequences = `${this.root}/sequences`;
    this.status = `${this.root}/status`;
    this.locks = `${this.root}/locks`;
    this.audit = `${this.root}/audit`;
  }

  /** Directories that always exist (made when the store opens). */
  get dirs(): string[] {
    return [this.images, this.nodes, this.requests, this.requestsLock, this.launchers, this.sessions, this.sequences, this.status, this.locks];
  }

  image(diskimage: string): string {
    return `${this.images}/${segment(diskimage, 'diskimage')}`;
  }

  builds(diskimage: string): string {
    return `${this.image(diskimage)}/builds`;
  }

  build(diskimage: string, seq: string): string {
    return `${this.builds(diskimage)}/${seq}`;
  }

  providers(diskimage: string, seq: string): string {
    return `${this.build(diskimage, seq)}/providers`;
  }

  provider(diskimage: string, seq: string, provider: string): string {
    return `${this.providers(diskimage, seq)}/${segment(provider, 'provider')}`;
  }

  providerImages(diskimage: string, seq: string, provider: string): string {
    return `${this.provider(diskimage, seq, provider)}/images`;
  }

  upload(diskimage: string, seq: string, provider: string, uploadId: string): string {
    return `${this.providerImages(diskimage, seq, provider)}/${uploadId}`;
  }

  requestBuild(diskimage: string): string {
    return `${this.image(diskimage)}/request-build`;
  }

  /** This project's upload retry requests of a diskimage (issue 25), one child per provider: `{"requested"}`. */
  uploadRetries(diskimage: string): string {
    return `${this.image(diskimage)}/upload-retries`;
  }

  uploadRetry(diskimage: string, provider: string): string {
    return `${this.uploadRetries(diskimage)}/${segment(provider, 'provider')}`;
  }

  /** Nodepool's runtime pause of a whole diskimage. */
  pause(diskimage: string): string {
    return `${this.image(diskimage)}/pause`;
  }

  /** This project's pauses of a diskimage's uploads to one provider. */
  providerPauses(diskimage: string): string {
    return `${this.image(diskimage)}/provider-pauses`;
  }

  providerPause(diskimage: string, provider: string): string {
    return `${this.providerPauses(diskimage)}/${segment(provider, 'provider')}`;
  }

  /** This project's diskimage-wide pin (issue 24): `{"build_id", "since", "reason"}`. */
  pin(diskimage: string): string {
    return `${this.image(diskimage)}/pin`;
  }

  /** This project's pins of a diskimage on one provider, one child per provider. */
  providerPins(diskimage: string): string {
    return `${this.image(diskimage)}/provider-pins`;
  }

  providerPin(diskimage: string, provider: string): string {
    return `${this.providerPins(diskimage)}/${segment(provider, 'provider')}`;
  }

  /** This project's revoked builds of a diskimage (issue 24), one child per build id: `{"since", "reason"}`. */
  revocations(diskimage: string): string {
    return `${this.image(diskimage)}/revocations`;
  }

  revocation(diskimage: string, buildId: string): string {
    return `${this.revocations(diskimage)}/${segment(buildId, 'build id')}`;
  }

  node(id: string): string {
    return `${this.nodes}/${segment(id, 'node id')}`;
  }

  request(id: string): string {
    return `${this.requests}/${segment(id, 'node request id')}`;
  }

  launcher(id: string): string {
    return `${this.launchers}/${segment(id, 'launcher id')}`;
  }

  /** `components/<kind>`: its children are `<hostname><10-digit sequence>`. */
  componentKind(kind: string): string {
    return `${this.components}/${segment(kind, 'component kind')}`;
  }

  session(id: string): string {
    return `${this.sessions}/${segment(id, 'session id')}`;
  }

  sequence(name: string): string {
    return `${this.sequences}/${segment(name, 'sequence')}`;
  }

  statusKey(key: string): string {
    return `${this.status}/${encodeURIComponent(key)}`;
  }

  /**
   * The lock path of a resource: Nodepool's `nodes/<id>/lock` and `requests-lock/<id>`, and
   * `locks/<encoded resource>` for anything else.
   */
  lockPath(resource: string): string {
    const nodeId = resource.startsWith(NODE_LOCK_PREFIX) ? resource.slice(NODE_LOCK_PREFIX.length) : undefined;
    if (nodeId !== undefined && isPlainSegment(nodeId)) return `${this.node(nodeId)}/${LOCK_DIR}`;
    const requestId = resource.startsWith(REQUEST_LOCK_PREFIX) ? resource.slice(REQUEST_LOCK_PREFIX.length) : undefined;
    if (requestId !== undefined && isPlainSegment(requestId)) return `${this.requestsLock}/${requestId}`;
    return `${this.locks}/${encodeURIComponent(resource)}`;
  }
}

function isPlainSegment(s: string): boolean {
  return s !== '' && s !== '.' && s !== '..' && !s.includes('/') && !s.includes('\0') && !s.includes('%');
}

/** Formats a 10-digit sequence. */
export function seq10(n: number): string {
  return String(n).padStart(10, '0');
}
