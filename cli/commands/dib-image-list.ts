/**
 * `nodepool dib-image-list [--json]`: every build (`ID, Image, Builder, Formats, State, Age`)
 * and, under the table, what needs attention per diskimage from the server's lifecycle status,
 * and why the server holds deletions back. The view is the web's `/api/dib-image-list`
 * (lib/status/list-views.ts), which leaves the held deletions out.
 */
import { buildListView, viewJsonText, viewText } from '../../lib/status/list-views.js';
import { runListCommand, type ListCommandOptions } from './list-command.js';
import type { CommandResult } from './shared.js';

/** Options of {@link dibImageList}. `json`: print `{ builds, diskimages, held }` instead of the table. */
export type DibImageListOptions = ListCommandOptions;

/** Lists builds (table or JSON); exit 0, or 2 for a config error. */
export function dibImageList(opts: DibImageListOptions): Promise<CommandResult> {
  return runListCommand(opts, { readOnly: true, warnServer: true }, async (src) => {
    const { held, ...view } = await buildListView(src);
    if (opts.json) return viewJsonText({ json: { ...view.json, held } });
    return viewText({ ...view, lines: [...view.lines, ...held.map((why) => `deletion held: ${why}`)] });
  });
}
