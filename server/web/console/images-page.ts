/**
 * The console's images page (`/images`, issue 25 §3): per diskimage its state (paused, build
 * requested, pins, revoked builds and what needs attention, as `image-status` and
 * `image-list` say it), its builds (state, age, formats, size), a provider × build matrix of
 * upload states with progress bars and rollout, and each target's validation. Buttons build,
 * pause and unpause the diskimage and pin, revoke or delete a build. Reads with the CLI's
 * list-data.ts; {@link imagesPage} is pure.
 */
import { formatAge } from '../../../lib/status/age.js';
import { readImageStatusList, readUploadList, settingsFor, type UploadListData } from '../../../lib/status/list-data.js';
import { formatBytes } from '../../../lib/status/progress.js';
import {
  buildPinned, buildRevoked, diskimageRollout, pinnedText, revokedText, rolloutLines, uploadRollout, type SettingsFor,
} from '../../../lib/status/rollout-status.js';
import { transferText, targetAttention, uploadTransfer } from '../../../lib/status/uploads.js';
import { targetValidation, validationAttentionParts } from '../../../lib/status/validation.js';
import type { BuildRecord, BuildRequest, UploadRecord } from '../../../lib/store/models.js';
import type { WebContext } from '../web-context.js';
import { stateCell, type ActionButton, type Block, type Cell, type ConsolePage } from './page-model.js';

/** What the images page is made from. */
export interface ImagesData extends UploadListData {
  now: number;
  /** Configured diskimage names, in config order. */
  diskimages: string[];
  builds: BuildRecord[];
  buildRequests: BuildRequest[];
  settingsFor: SettingsFor;
}

export async function readImages(ctx: WebContext): Promise<ImagesData> {
  const config = ctx.config();
  const [uploadList, imageStatus] = await Promise.all([readUploadList(ctx.store), readImageStatusList(ctx.store)]);
  return {
    ...uploadList, now: ctx.clock(), diskimages: config.diskimages.map((d) => d.name), builds: imageStatus.builds,
    buildRequests: imageStatus.requests, settingsFor: settingsFor(config),
  };
}

const enc = encodeURIComponent;

/** `qcow2 1.2 GiB, raw 4.0 GiB`, or the formats asked for while building. */
export function filesText(b: BuildRecord): string {
  if (b.files.length === 0) return b.formats.join(', ');
  return b.files.map((f) => `${f.format} ${formatBytes(f.size)}`).join(', ');
}

/** The buttons of a build (on the images and build pages). */
export function buildActions(b: BuildRecord, revoked: boolean): ActionButton[] {
  return [
    { label: 'Pin', method: 'POST', path: `/api/image/${enc(b.diskimage)}/pin`, body: { build: b.id }, confirm: `Pin ${b.diskimage} to build ${b.id} on every provider?` },
    revoked
      ? { label: 'Unrevoke', method: 'POST', path: `/api/build/${enc(b.id)}/unrevoke` }
      : { label: 'Revoke', method: 'POST', path: `/api/build/${enc(b.id)}/revoke`, confirm: `Revoke build ${b.id}? No launch boots it again.` },
    { label: 'Promote', method: 'POST', path: `/api/build/${enc(b.id)}/promote` },
    { label: 'Delete', method: 'DELETE', path: `/api/build/${enc(b.id)}`, confirm: `Delete build ${b.id} and its uploads?` },
  ];
}

/** An upload's cell in the matrix: state, transfer with a bar while uploading, rollout once ready. */
export function uploadCell(u: UploadRecord | undefined, d: Pick<ImagesData, 'now' | 'pins' | 'revocations' | 'settingsFor'>): Cell {
  if (!u) return '';
  const t = uploadTransfer(u, d.now);
  const rollout = uploadRollout(u, { pins: d.pins, revocations: d.revocations, settingsFor: d.settingsFor, now: d.now });
  const text = [u.state, t ? transferText(t) : '', rollout ? rollout.words : ''].filter(Boolean).join(' · ');
  return { text, cls: `state-${u.state}`, ...(t ? { bar: t.percent } : {}) };
}

function diskimageBlocks(name: string, i: number, d: ImagesData): Block[] {
  const builds = d.builds.filter((b) => b.diskimage === name).sort((a, b) => (a.id < b.id ? 1 : -1));
  const uploads = d.uploads.filter((u) => u.diskimage === name);
  const paused = d.pauses.filter((p) => p.diskimage === name);
  const providers = [...new Set([...d.status.targets.filter((t) => t.diskimage === name).map((t) => t.provider), ...uploads.map((u) => u.provider)])].sort();
  const matrixBuilds = builds.filter((b) => b.state !== 'deleting' || uploads.some((u) => u.buildId === b.id)).slice(0, 6);
  const requested = d.buildRequests.find((r) => r.diskimage === name);
  const state = [
    ...paused.map((p) => (p.provider === null ? 'builds paused' : `uploads to ${p.provider} paused`) + ` since ${formatAge(d.now - p.since)}${p.reason ? ` (${p.reason})` : ''}`),
    ...(requested ? [`build requested ${formatAge(d.now - requested.requested)} ago`] : []),
    ...rolloutLines(name, diskimageRollout(d, name)),
    ...targetAttention({ targets: d.status.targets, uploads: d.uploads, pauses: d.pauses, now: d.now }).filter((l) => l.startsWith(`${name} `)),
  ];
  const validation = providers.map((p) => ({ p, v: targetValidation(d.uploads, name, p, d.now) })).filter(({ v }) => v.validating.length > 0 || v.lastFailure);
  return [
    {
      kind: 'heading', id: `image-${i}`, text: name, actions: [
        { label: 'Build now', method: 'POST', path: `/api/image/${enc(name)}/build` },
        paused.some((p) => p.provider === null)
          ? { label: 'Unpause', method: 'POST', path: `/api/image/${enc(name)}/unpause` }
          : { label: 'Pause', method: 'POST', path: `/api/image/${enc(name)}/pause` },
        { label: 'Unpin', method: 'POST', path: `/api/image/${enc(name)}/unpin` },
      ],
    },
    { kind: 'lines', id: `image-${i}-state`, lines: state, empty: 'not paused, no build requested, nothing pinned or revoked' },
    {
      kind: 'table', id: `image-${i}-builds`, title: 'Builds', empty: 'no builds',
      columns: ['Build', 'State', 'Age', 'Formats and sizes', 'Builder', 'Pinned', 'Revoked', 'Reason', ''],
      rows: builds.map((b) => {
        const revoked = buildRevoked(d.revocations, b);
        return [{ text: b.id, href: `/builds/${enc(b.id)}` }, stateCell(b.state), formatAge(d.now - b.stateTime), filesText(b), b.builderHostname ?? '',
          pinnedText(buildPinned(d.pins, b)), revokedText(revoked), { text: b.reason ?? '', pre: true }, { actions: buildActions(b, revoked !== null) }];
      }),
    },
    {
      kind: 'table', id: `image-${i}-uploads`, title: 'Uploads: provider × build', empty: 'no upload targets',
      columns: ['Provider', ...matrixBuilds.map((b) => b.id)],
      rows: providers.map((p) => [p, ...matrixBuilds.map((b) => uploadCell(
        uploads.filter((u) => u.provider === p && u.buildId === b.id).sort((x, y) => (x.id < y.id ? 1 : -1))[0], d))]),
    },
    {
      kind: 'table', id: `image-${i}-validation`, title: 'Validation', empty: 'no upload validating, no failed check kept',
      columns: ['Provider', 'State', 'Last failed check'],
      rows: validation.map(({ p, v }) => [p, validationAttentionParts(v).join('; '), { text: v.lastFailure?.reason ?? '', pre: true }]),
    },
  ];
}

/** The images page. */
export function imagesPage(d: ImagesData): ConsolePage {
  const names = [...d.diskimages, ...[...new Set(d.builds.map((b) => b.diskimage))].filter((n) => !d.diskimages.includes(n)).sort()];
  return {
    title: 'Images', nav: '/images', generated: d.now,
    summary: { text: `${names.length} diskimage${names.length === 1 ? '' : 's'}, ${d.builds.length} builds, ${d.uploads.length} uploads`, ok: true },
    blocks: names.length === 0 ? [{ kind: 'lines', id: 'images', lines: [], empty: 'no diskimages configured' }] : names.flatMap((n, i) => diskimageBlocks(n, i, d)),
  };
}
