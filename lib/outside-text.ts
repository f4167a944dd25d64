/**
 * Text that came from outside (a URL path, a header, an operator's reason, a cloud's answer)
 * may carry line breaks, NUL or terminal escapes. Before such text is logged or stored it is
 * made one printable line: every control character (C0, DEL, C1) and the Unicode line and
 * paragraph separators become a visible escape, so a value can neither forge a log line nor
 * drive an operator's terminal.
 */

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** `text` with each control character written as `\n`, `\r`, `\t` or `\xHH` / `\uHHHH`. */
export function escapeControlChars(text: string): string {
  return text.replace(CONTROL, (c) => {
    const named = NAMED[c];
    if (named) return named;
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** Whether `text` holds a character {@link escapeControlChars} would escape. */
export function hasControlChars(text: string): boolean {
  CONTROL.lastIndex = 0;
  const found = CONTROL.test(text);
  CONTROL.lastIndex = 0;
  return found;
}
