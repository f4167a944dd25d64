/**
 * Schemas of names that become file names, image ids and Gearman function names, with
 * messages that state the rule (which characters, how long).
 */
import { DISKIMAGE_NAME_RE } from '../images/image-file.js';
import { describeValue, string, type Schema } from './schema-kit.js';

/** The longest diskimage name {@link DISKIMAGE_NAME_RE} allows (a build id adds `-` and 10 digits). */
export const DISKIMAGE_NAME_MAX_LENGTH = 51;

const RULE = `1 to ${DISKIMAGE_NAME_MAX_LENGTH} letters, digits, ".", "_" or "-", starting with a letter or digit`;

/** A diskimage name; a name that is too long is reported with its length and the limit. */
export function diskimageName(): Schema<string> {
  const text = string();
  return {
    expected: `a diskimage name (${RULE})`,
    parse(v, path, p) {
      const s = text.parse(v, path, p);
      if (s === undefined || DISKIMAGE_NAME_RE.test(s)) return s;
      if (s.length > DISKIMAGE_NAME_MAX_LENGTH) {
        p.add(path, `expected a diskimage name of at most ${DISKIMAGE_NAME_MAX_LENGTH} characters, got ${s.length} characters (${describeValue(s)})`);
      } else {
        p.add(path, `expected ${this.expected}, got ${describeValue(s)}`);
      }
      return undefined;
    },
  };
}
