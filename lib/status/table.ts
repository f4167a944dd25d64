/**
 * A plain-text table like PrettyTable with Nodepool's settings: `+---+` borders, one space
 * of padding, every column left-aligned, a rule under the header and at the bottom.
 */

/** Width of a cell in terminal columns (code points; tables hold ids, names and states). */
function width(s: string): number {
  return [...s].length;
}

/**
 * Renders `rows` under `columns`; each line ends with a newline. Rows shorter than the header
 * are padded with empty cells. Newlines inside a cell are shown as spaces.
 */
export function renderTable(columns: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const clean = (s: string | undefined): string => (s ?? '').replace(/[\r\n]+/g, ' ');
  const body = rows.map((r) => columns.map((_, i) => clean(r[i])));
  const widths = columns.map((c, i) => Math.max(width(c), ...body.map((r) => width(r[i] as string))));
  const rule = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+\n`;
  const line = (cells: readonly string[]): string =>
    `|${cells.map((c, i) => ` ${c}${' '.repeat((widths[i] as number) - width(c))} `).join('|')}|\n`;
  return rule + line(columns.map(clean)) + rule + body.map(line).join('') + rule;
}
