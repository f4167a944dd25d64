/**
 * `nodepool image-delete <build-id>` and `nodepool image-delete --provider P --image I
 * --build-id B --upload-id U`, with Nodepool 3.x semantics: a build is marked `deleting`
 * (the server deletes its uploads first, then its files); an upload is marked `deleting`
 * (the server deletes it from the cloud). Neither while it is still being built or uploaded.
 * The actions are lib/actions/image-delete.ts `deleteBuild` and `deleteUpload`.
 */
import { deleteBuild, deleteUpload, type DeleteBuildResult, type DeleteUploadResult, type UploadName } from '../../lib/actions/image-delete.js';
import { CommandFailure } from '../../lib/errors.js';
import {
  commandConfig, EXIT, runCommand, withStore, type CommandContext, type CommandResult,
} from './shared.js';
import { settled } from './action-refusal.js';

/** Options of {@link imageDelete}: a build id, or all four upload options. */
export interface ImageDeleteOptions extends CommandContext {
  /** The positional build id (`<diskimage>-<10 digits>`). */
  build?: string;
  provider?: string;
  image?: string;
  buildId?: string;
  uploadId?: string;
}

/** What an image-delete invocation names. */
export type DeleteTarget =
  | { kind: 'build'; buildId: string }
  | ({ kind: 'upload' } & UploadName);

const UPLOAD_OPTIONS = ['provider', 'image', 'buildId', 'uploadId'] as const;
const flag = (k: (typeof UPLOAD_OPTIONS)[number]): string => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/** Decides what the options name (pure). Thrown: CommandFailure (exit 2) for a bad combination. */
export function deleteTarget(o: ImageDeleteOptions): DeleteTarget {
  const given = UPLOAD_OPTIONS.filter((k) => o[k] !== undefined && o[k] !== '');
  if (o.build !== undefined && o.build !== '') {
    if (given.length) {
      throw new CommandFailure(EXIT.usage, `Give either a build id or ${UPLOAD_OPTIONS.map(flag).join(', ')}, not both`);
    }
    return { kind: 'build', buildId: o.build };
  }
  if (given.length === 0) {
    throw new CommandFailure(EXIT.usage, `Name a build id, or an upload with ${UPLOAD_OPTIONS.map(flag).join(', ')}`);
  }
  const missing = UPLOAD_OPTIONS.filter((k) => !given.includes(k));
  if (missing.length) {
    throw new CommandFailure(EXIT.usage, `Deleting an upload needs all of ${UPLOAD_OPTIONS.map(flag).join(', ')} (missing ${missing.map(flag).join(', ')})`);
  }
  return { kind: 'upload', provider: o.provider as string, image: o.image as string, buildId: o.buildId as string, uploadId: o.uploadId as string };
}

/** Marks a build or one upload for deletion; exit 0, 1 (in progress), 2 (usage) or 3 (not found). */
export function imageDelete(opts: ImageDeleteOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const target = deleteTarget(opts);
    const config = commandConfig(opts);
    const { message } = settled(await withStore(config, (store): Promise<DeleteBuildResult | DeleteUploadResult> =>
      target.kind === 'build' ? deleteBuild(store, { buildId: target.buildId }) : deleteUpload(store, target)));
    out.out(`${message}\n`);
    return EXIT.ok;
  });
}
