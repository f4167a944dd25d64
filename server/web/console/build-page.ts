/**
 * The console's build page (`/builds/<build-id>`, issue 25 §3): the build's record, its
 * uploads with progress and rollout, the buttons that act on it and its uploads, and its log,
 * which the page's script follows at `/api/build/<id>/log` until complete. {@link buildPage} is pure.
 */
import { formatAge } from '../../../lib/status/age.js';
import { readRolloutRecords, settingsFor } from '../../../lib/status/list-data.js';
import { progressPercent } from '../../../lib/status/progress.js';
import { buildPinned, buildRevoked, pinnedText, revokedText, uploadLaunches, uploadRollout, type SettingsFor } from '../../../lib/status/rollout-status.js';
import { transferText, uploadTransfer } from '../../../lib/status/uploads.js';
import type { BuildRecord, PinRecord, RevocationRecord, UploadRecord } from '../../../lib/store/models.js';
import type { WebContext } from '../web-context.js';
import { buildActions, filesText } from './images-page.js';
import { stateCell, type ActionButton, type Cell, type ConsolePage } from './page-model.js';

export interface BuildData {
  now: number;
  build: BuildRecord;
  uploads: UploadRecord[];
  pins: PinRecord[];
  revocations: RevocationRecord[];
  settingsFor: SettingsFor;
}

/** Reads a build and its uploads; undefined when there is no such build. */
export async function readBuild(ctx: WebContext, id: string): Promise<BuildData | undefined> {
  const build = await ctx.store.getBuild(id);
  if (!build) return undefined;
  const [uploads, rollout] = await Promise.all([ctx.store.listUploads({ buildId: id }), readRolloutRecords(ctx.store)]);
  return { now: ctx.clock(), build, uploads: uploads.filter((u) => u.buildId === id), ...rollout, settingsFor: settingsFor(ctx.config()) };
}

const enc = encodeURIComponent;

function uploadActions(u: UploadRecord): ActionButton[] {
  return [
    ...(u.state === 'failed' ? [{ label: 'Retry', method: 'POST' as const, path: `/api/upload/${enc(u.id)}/retry` }] : []),
    { label: 'Delete', method: 'DELETE', path: `/api/upload/${enc(u.id)}`, confirm: `Delete upload ${u.id} (${u.provider})?` },
  ];
}

/** The build page. */
export function buildPage(d: BuildData): ConsolePage {
  const b = d.build;
  const revoked = buildRevoked(d.revocations, b);
  const percent = progressPercent(b.progress);
  const fields: Cell[][] = [
    ['Diskimage', { text: b.diskimage, href: '/images' }],
    ['State', stateCell(b.state)],
    ['Age', formatAge(d.now - b.stateTime)],
    ['Created (UTC)', new Date(b.created).toISOString().replace('T', ' ').slice(0, 19)],
    ['Builder', b.builderHostname ?? ''],
    ['Formats and sizes', filesText(b)],
    ['Files', { text: b.files.map((f) => `${f.format} ${f.size} bytes sha256 ${f.sha256}`).join('\n'), pre: true }],
    ['Progress', percent === null ? '' : { bar: percent, text: `${percent}%` }],
    ['Pinned', pinnedText(buildPinned(d.pins, b))],
    ['Revoked', revokedText(revoked)],
    ['Reason', { text: b.reason ?? '', pre: true }],
  ];
  const rolloutInput = { pins: d.pins, revocations: d.revocations, settingsFor: d.settingsFor, now: d.now };
  return {
    title: `Build ${b.id}`, nav: '/images', generated: d.now,
    summary: { text: `${b.diskimage}: ${b.state}`, ok: b.state !== 'failed' && b.state !== 'lost' },
    log: { url: `/api/build/${enc(b.id)}/log` },
    blocks: [
      { kind: 'heading', id: 'build-actions', text: b.id, actions: buildActions(b, revoked !== null) },
      { kind: 'table', id: 'build', columns: ['Field', 'Value'], rows: fields },
      {
        kind: 'table', id: 'uploads', title: 'Uploads', empty: 'no uploads',
        columns: ['Upload', 'Provider', 'State', 'Age', 'Progress', 'Image', 'Rollout', 'Launches', 'Reason', ''],
        rows: d.uploads.map((u) => {
          const t = uploadTransfer(u, d.now);
          const launches = uploadLaunches(u);
          return [u.id, u.provider, stateCell(u.state), formatAge(d.now - u.stateTime), t ? { bar: t.percent, text: transferText(t) } : '',
            u.externalId ?? u.externalName ?? '', uploadRollout(u, rolloutInput)?.words ?? '', `${launches.launches} ok, ${launches.launchFailures} failed`,
            { text: u.reason ?? '', pre: true }, { actions: uploadActions(u) }];
        }),
      },
    ],
  };
}

/** The page of an unknown build. */
export function unknownBuildPage(id: string, now: number): ConsolePage {
  return { title: `Build ${id}`, nav: '/images', generated: now, summary: { text: 'no such build', ok: false }, blocks: [{ kind: 'lines', id: 'build', lines: [`no build ${id} in the store`] }] };
}
