import { test } from 'node:test';
import assert from 'node:assert/strict';
import { escapeControlChars, hasControlChars } from '../../lib/outside-text.js';

test('line breaks, NUL, ESC, DEL, C1 and Unicode separators become visible escapes', () => {
  assert.equal(escapeControlChars('a\nb\r\tc'), 'a\\nb\\r\\tc');
  assert.equal(escapeControlChars('x\u0000y\u001b[31mz\u007f'), 'x\\x00y\\x1b[31mz\\x7f');
  assert.equal(escapeControlChars('p\u0085q\u2028r\u2029'), 'p\\x85q\\u2028r\\u2029');
});

test('printable text, including non-ASCII, is left as it is', () => {
  const s = 'debian-bookworm ü 日本 /api/node/0000000001 "quoted"';
  assert.equal(escapeControlChars(s), s);
  assert.equal(hasControlChars(s), false);
  assert.equal(hasControlChars('a\nb'), true);
  assert.equal(hasControlChars('a\nb'), true); // the global regex keeps no state between calls
});
