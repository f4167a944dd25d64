/**
 * The write API's endpoints (issue 25 §1), one row each: method, path in the style of Zuul's
 * REST API, the audit trail's action name, the role it needs, the body it takes, what it names,
 * and the operator action it runs (lib/actions), exactly as the CLI runs it. docs/api.md lists
 * them for operators.
 */
import type { Refused } from '../../../lib/actions/action-result.js';
import { refuse } from '../../../lib/actions/action-result.js';
import { requestImageBuild } from '../../../lib/actions/image-build.js';
import { deleteBuild, deleteUpload, type UploadName } from '../../../lib/actions/image-delete.js';
import { pauseImage, unpauseImage } from '../../../lib/actions/image-pause.js';
import { pinImage, unpinImage } from '../../../lib/actions/image-pin.js';
import { promoteBuild } from '../../../lib/actions/image-promote.js';
import { REVOKE_NODES, revokeBuild, unrevokeBuild, type RevokeNodes } from '../../../lib/actions/image-revoke.js';
import { deleteNode } from '../../../lib/actions/node-delete.js';
import { holdNode, releaseNode } from '../../../lib/actions/node-hold.js';
import { normalUploadId, retryUpload } from '../../../lib/actions/upload-retry.js';
import type { Config } from '../../../lib/config/schema.js';
import { MAX_TIMER_SECONDS } from '../../../lib/config/schema-kit.js';
import { CorruptRecordError } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/log.js';
import type { Store } from '../../../lib/store/store.js';
import type { Role } from '../../../lib/web-auth/auth-types.js';
import type { RouteMethod } from '../routes.js';
import type { BodyFields, BodySpec } from './request-body.js';

/** What an endpoint's action runs with. */
export interface ActionEnv {
  store: Store;
  config: Config;
  /** `nodepool-web:<user>`: the owner of the session a node action holds. */
  requestor: string;
  now: () => number;
  log: Logger;
}

/** An action's answer as the API sends it. */
export type ApiResult = { ok: true; message: string } | Refused;

/** One write endpoint. */
export interface WriteEndpoint {
  method: Exclude<RouteMethod, 'GET'>;
  pattern: string;
  /** The audit trail's action name (the CLI command's). */
  action: string;
  role: Role;
  /** A stronger role the checked body asks for (`revoke` with `nodes: delete-ready` deletes nodes: admin), else `role`. */
  needs?(body: BodyFields): Role;
  body: BodySpec;
  /** What the request names, for the audit trail. */
  target(params: Record<string, string>, body: BodyFields): string;
  run(env: ActionEnv, params: Record<string, string>, body: BodyFields): Promise<ApiResult>;
}

const str = (b: BodyFields, k: string): string | undefined => b[k] as string | undefined;
const num = (b: BodyFields, k: string): number | undefined => b[k] as number | undefined;
const p = (params: Record<string, string>, k: string): string => params[k] as string;

const REASON = { reason: { type: 'string' } } as const;
const PROVIDER = { provider: { type: 'string' } } as const;
/** `ubuntu-jammy`, or `ubuntu-jammy@cloud-a` with a provider. */
const imageTarget = (params: Record<string, string>, body: BodyFields): string =>
  `${p(params, 'diskimage')}${str(body, 'provider') !== undefined ? `@${str(body, 'provider')}` : ''}`;

/**
 * The operator's name of upload `id` for {@link deleteUpload} (provider, diskimage, build, id),
 * from its record or, for a corrupt record, the provider the store still reads from it.
 */
async function uploadName(store: Store, id: string): Promise<UploadName | Refused<'unknown-upload'>> {
  const uploadId = normalUploadId(id);
  try {
    const u = await store.getUpload(uploadId);
    if (u) return { provider: u.provider, image: u.diskimage, buildId: u.buildId, uploadId: u.id };
  } catch (err) {
    if (!(err instanceof CorruptRecordError)) throw err;
    const c = (await store.listCorrupt({ kinds: ['upload'] })).find((x) => x.id === uploadId);
    if (c?.provider) return { provider: c.provider, image: '', buildId: '', uploadId };
  }
  return refuse('unknown-upload', `Image upload ${uploadId} not found`);
}

/** Every write endpoint. */
export const WRITE_ENDPOINTS: readonly WriteEndpoint[] = [
  {
    method: 'POST', pattern: '/api/image/:diskimage/build', action: 'image-build', role: 'operator', body: {},
    target: (params) => p(params, 'diskimage'),
    run: (env, params) => requestImageBuild(env, { diskimage: p(params, 'diskimage') }),
  },
  {
    method: 'DELETE', pattern: '/api/build/:build', action: 'image-delete', role: 'admin', body: {},
    target: (params) => p(params, 'build'),
    run: (env, params) => deleteBuild(env.store, { buildId: p(params, 'build') }),
  },
  {
    method: 'DELETE', pattern: '/api/upload/:upload', action: 'image-delete-upload', role: 'admin', body: {},
    target: (params) => p(params, 'upload'),
    run: async (env, params) => {
      const name = await uploadName(env.store, p(params, 'upload'));
      return 'ok' in name ? name : deleteUpload(env.store, name);
    },
  },
  {
    method: 'POST', pattern: '/api/image/:diskimage/pause', action: 'image-pause', role: 'operator', body: { ...PROVIDER, ...REASON },
    target: imageTarget,
    run: (env, params, body) => pauseImage(env, { diskimage: p(params, 'diskimage'), provider: str(body, 'provider'), reason: str(body, 'reason') }),
  },
  {
    method: 'POST', pattern: '/api/image/:diskimage/unpause', action: 'image-unpause', role: 'operator', body: { ...PROVIDER, ...REASON },
    target: imageTarget,
    run: (env, params, body) => unpauseImage(env, { diskimage: p(params, 'diskimage'), provider: str(body, 'provider') }),
  },
  {
    method: 'POST', pattern: '/api/upload/:upload/retry', action: 'upload-retry', role: 'operator', body: REASON,
    target: (params) => p(params, 'upload'),
    run: (env, params) => retryUpload(env, { uploadId: p(params, 'upload') }),
  },
  {
    method: 'POST', pattern: '/api/image/:diskimage/pin', action: 'image-pin', role: 'operator',
    body: { build: { type: 'string', required: true }, ...PROVIDER, ...REASON },
    target: (params, body) => `${imageTarget(params, body)}${str(body, 'build') !== undefined ? `:${str(body, 'build')}` : ''}`,
    run: (env, params, body) => pinImage(env, {
      diskimage: p(params, 'diskimage'), buildId: str(body, 'build') as string, provider: str(body, 'provider'), reason: str(body, 'reason'),
    }),
  },
  {
    method: 'POST', pattern: '/api/image/:diskimage/unpin', action: 'image-unpin', role: 'operator', body: { ...PROVIDER, ...REASON },
    target: imageTarget,
    run: (env, params, body) => unpinImage(env, { diskimage: p(params, 'diskimage'), provider: str(body, 'provider') }),
  },
  {
    method: 'POST', pattern: '/api/build/:build/revoke', action: 'image-revoke', role: 'operator',
    body: { ...REASON, nodes: { type: 'string' } },
    // Deleting nodes needs admin, as DELETE /api/node/:node does.
    needs: (body) => (str(body, 'nodes') === 'delete-ready' ? 'admin' : 'operator'),
    target: (params) => p(params, 'build'),
    run: async (env, params, body) => {
      const nodes = str(body, 'nodes') ?? 'keep';
      if (!(REVOKE_NODES as readonly string[]).includes(nodes)) return refuse('invalid-argument', `field nodes: expected one of ${REVOKE_NODES.join(', ')}, got ${JSON.stringify(nodes)}`);
      return revokeBuild(env, { buildId: p(params, 'build'), reason: str(body, 'reason'), nodes: nodes as RevokeNodes });
    },
  },
  {
    method: 'POST', pattern: '/api/build/:build/unrevoke', action: 'image-unrevoke', role: 'operator', body: REASON,
    target: (params) => p(params, 'build'),
    run: (env, params) => unrevokeBuild(env, { buildId: p(params, 'build') }),
  },
  {
    method: 'POST', pattern: '/api/build/:build/promote', action: 'image-promote', role: 'operator', body: REASON,
    target: (params) => p(params, 'build'),
    run: (env, params) => promoteBuild(env, { buildId: p(params, 'build') }),
  },
  {
    method: 'POST', pattern: '/api/node/:node/hold', action: 'hold', role: 'operator', body: { ...REASON, expires: { type: 'number' } },
    target: (params) => p(params, 'node'),
    run: (env, params, body) => {
      const expires = num(body, 'expires');
      // As the CLI's --expire: a longer delay would overflow Node's timers (1e308 read as "never").
      if (expires !== undefined && expires > MAX_TIMER_SECONDS) {
        return Promise.resolve(refuse('invalid-argument', `field expires: at most ${MAX_TIMER_SECONDS} seconds (about 24.8 days), got ${expires}`));
      }
      return holdNode(env, { nodeId: p(params, 'node'), reason: str(body, 'reason'), expireSeconds: expires, requestor: env.requestor });
    },
  },
  {
    method: 'POST', pattern: '/api/node/:node/release', action: 'release', role: 'operator', body: REASON,
    target: (params) => p(params, 'node'),
    run: (env, params) => releaseNode(env, { nodeId: p(params, 'node'), requestor: env.requestor }),
  },
  {
    method: 'DELETE', pattern: '/api/node/:node', action: 'delete', role: 'admin', body: {},
    target: (params) => p(params, 'node'),
    run: (env, params) => deleteNode(env, { nodeId: p(params, 'node'), requestor: env.requestor, log: env.log }),
  },
];

/** Body fields an action does not store itself, which the audit entry's message carries (`reason` of an unpause, unpin, …). */
export function auditNote(ep: WriteEndpoint, body: BodyFields): string {
  const reason = str(body, 'reason');
  const stored = ['image-pause', 'image-pin', 'image-revoke', 'hold'].includes(ep.action);
  return reason !== undefined && !stored ? ` (reason: ${reason})` : '';
}
