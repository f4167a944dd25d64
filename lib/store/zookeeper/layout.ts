/**
 * Where the ZooKeeper store keeps things: Nodepool's tree (`/nodepool/images`, `/nodepool/nodes`,
 * `/nodepool/requests`, `/nodepool/requests-lock`, `/nodepool/launchers`, `/nodepool/components`) under the configured
 * chroot, plus this project's own paths beside it (`sessions`, `sequences`, `status`, `locks`,
 * issue 25's `audit` trail, and `image-intents/<diskimage>/`: per-provider pauses, the rollout
 * intents of issue 24 (pins, revocations) and upload retry requests), which Nodepool's readers
 * never look at.
 *
 * Nothing of ours goes under `/nodepool/images`: a Nodepool 11 launcher's image cache takes any
 * `/nodepool/images/<a>/<b>/<c>` for a build and any path eight levels down for an upload, by
 * depth alone (zookeeper.py `_parseImageBuildPath`, `_parseImageUploadPath`). Older versions kept
 * the intents there (`/nodepool/images/<diskimage>/provider-pauses/<provider>` …); a writing
 * open moves them (intent-move.ts) and, until then, they are read where they are.
 */
import { StoreError } from '../../errors.js';
import { NODE_LOCK_PREFIX, REQUEST_LOCK_PREFIX } from '../lock-names.js';

/** Children of a lock path are named `<uuid hex>__lock__<10-digit sequence>` (kazoo's Lock). */
export const LOCK_NODE_MARK = '__lock__';

/** The name of the lock directory under builds, upload dirs and nodes (never a record). */
export const LOCK_DIR = 'lock';

/** A 10-digit sequence name. */
export const SEQ_RE = /^\d{10}$/;

/** This project's records of a diskimage that are one znode each, under `image-intents/<diskimage>/`. */
export const OWN_IMAGE_RECORDS: readonly string[] = ['pin'];

/** This project's directories of a diskimage with one record per child (a provider, a build id), under `image-intents/<diskimage>/`. */
export const OWN_IMAGE_DIRS: readonly string[] = ['provider-pauses', 'provider-pins', 'revocations', 'upload-retries'];

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
  /** This project's records of each diskimage (pauses per provider, pins, revocations, upload retries): `image-intents/<diskimage>/…`. */
  readonly imageIntents: string;

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
    this.imageIntents = `${this.root}/image-intents`;
  }

  /** Directories that always exist (made when the store opens). */
  get dirs(): string[] {
    return [this.images, this.nodes, this.requests, this.requestsLock, this.launchers, this.sessions, this.sequences, this.status, this.locks, this.imageIntents];
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

  /** Nodepool's runtime pause of a whole diskimage. */
  pause(diskimage: string): string {
    return `${this.image(diskimage)}/pause`;
  }

  /** This project's records of `diskimage` (never under Nodepool's `images`, see the file comment). */
  intentImage(diskimage: string): string {
    return `${this.imageIntents}/${segment(diskimage, 'diskimage')}`;
  }

  /** This project's upload retry requests of a diskimage (issue 25), one child per provider: `{"requested"}`. */
  uploadRetries(diskimage: string): string {
    return `${this.intentImage(diskimage)}/upload-retries`;
  }

  uploadRetry(diskimage: string, provider: string): string {
    return `${this.uploadRetries(diskimage)}/${segment(provider, 'provider')}`;
  }

  /** This project's pauses of a diskimage's uploads to one provider. */
  providerPauses(diskimage: string): string {
    return `${this.intentImage(diskimage)}/provider-pauses`;
  }

  providerPause(diskimage: string, provider: string): string {
    return `${this.providerPauses(diskimage)}/${segment(provider, 'provider')}`;
  }

  /** This project's diskimage-wide pin (issue 24): `{"build_id", "since", "reason"}`. */
  pin(diskimage: string): string {
    return `${this.intentImage(diskimage)}/pin`;
  }

  /** This project's pins of a diskimage on one provider, one child per provider. */
  providerPins(diskimage: string): string {
    return `${this.intentImage(diskimage)}/provider-pins`;
  }

  providerPin(diskimage: string, provider: string): string {
    return `${this.providerPins(diskimage)}/${segment(provider, 'provider')}`;
  }

  /** This project's revoked builds of a diskimage (issue 24), one child per build id: `{"since", "reason"}`. */
  revocations(diskimage: string): string {
    return `${this.intentImage(diskimage)}/revocations`;
  }

  revocation(diskimage: string, buildId: string): string {
    return `${this.revocations(diskimage)}/${segment(buildId, 'build id')}`;
  }

  /**
   * The directories to make, level by level, before creating `path` under `imageIntents`
   * (the root, the diskimage, its directory when `path` is a child of one).
   */
  intentParents(path: string): string[] {
    const rel = this.intentRel(path);
    if (rel === undefined) throw new StoreError(`${path} is not under ${this.imageIntents}`);
    const parts = rel.split('/');
    const out = [this.imageIntents];
    for (let i = 1; i < parts.length; i++) out.push(`${this.imageIntents}/${parts.slice(0, i).join('/')}`);
    return out;
  }

  /** Where an older version kept the record at `path` (under `imageIntents`): the same place under Nodepool's `images`. */
  legacyOf(path: string): string | undefined {
    const rel = this.intentRel(path);
    return rel === undefined ? undefined : `${this.images}/${rel}`;
  }

  /** Where a record an older version kept at `legacy` (under `images/<diskimage>/`, one of ours) lives now. */
  movedTo(legacy: string): string | undefined {
    if (!legacy.startsWith(`${this.images}/`)) return undefined;
    const rel = legacy.slice(this.images.length + 1);
    const [, name] = rel.split('/');
    if (name === undefined || !(OWN_IMAGE_RECORDS.includes(name) || OWN_IMAGE_DIRS.includes(name))) return undefined;
    return `${this.imageIntents}/${rel}`;
  }

  private intentRel(path: string): string | undefined {
    return path.startsWith(`${this.imageIntents}/`) ? path.slice(this.imageIntents.length + 1) : undefined;
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
