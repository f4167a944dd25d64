/**
 * `nodepool dib-image-delete <build-id>`: Nodepool 3.x's name for `image-delete <build-id>`.
 */
import { imageDelete } from './image-delete.js';
import type { CommandContext, CommandResult } from './shared.js';

/** Marks a build for deletion, exactly as `image-delete <build-id>`. */
export function dibImageDelete(ctx: CommandContext & { build: string }): Promise<CommandResult> {
  return imageDelete({ configFile: ctx.configFile, now: ctx.now, build: ctx.build });
}
