/**
 * The operator console's page model (issue 25 §3): a page is a title and a list of blocks
 * (tables of cells, lines, charts, headings with action buttons). The server renders a model
 * as HTML (html.ts) and answers it as JSON for the page's script to redraw (client-script.ts),
 * so the page reads the same with and without JavaScript. Values are plain text everywhere;
 * only a chart carries markup, made by chart-svg.ts from escaped text.
 */

/** A button that calls the write API (shown once signed in). */
export interface ActionButton {
  label: string;
  method: 'POST' | 'DELETE';
  /** `/api/node/0000000001/hold`. */
  path: string;
  /** Asked before sending (`Delete build …?`). */
  confirm?: string;
  /** A JSON body to send. */
  body?: Record<string, string>;
}

/** A table cell beyond plain text. */
export interface RichCell {
  text?: string;
  /** CSS class of the cell (`state-ready`). */
  cls?: string;
  /** Makes the text a link (a console path). */
  href?: string;
  /** A progress bar, whole percent 0–100, before the text. */
  bar?: number;
  /** Keep the text's lines (reasons with console tails). */
  pre?: boolean;
  actions?: ActionButton[];
}

export type Cell = string | RichCell;

export type Block =
  | { kind: 'heading'; id: string; text: string; actions?: ActionButton[] }
  | { kind: 'table'; id: string; title?: string; columns: string[]; rows: Cell[][]; empty?: string }
  | { kind: 'lines'; id: string; title?: string; lines: string[]; empty?: string }
  /** `svg` is markup made by chart-svg.ts (every text in it escaped). */
  | { kind: 'chart'; id: string; title?: string; svg: string };

/** One select of a page's filter form (`GET` with query parameters; works without JavaScript). */
export interface FilterField {
  name: string;
  label: string;
  options: string[];
  value: string;
}

/** A console page. */
export interface ConsolePage {
  title: string;
  /** The navigation entry it belongs to (`/`, `/images`, …). */
  nav: string;
  /** Epoch ms it was made. */
  generated: number;
  /** One line under the title (`ready`, `3 loops failing`). */
  summary?: { text: string; ok: boolean };
  filters?: FilterField[];
  /** The build log to follow: the JSON endpoint without its query (`/api/build/<id>/log`). */
  log?: { url: string };
  blocks: Block[];
}

/** A cell with a state's colour. */
export function stateCell(state: string): RichCell {
  return { text: state, cls: `state-${state}` };
}
