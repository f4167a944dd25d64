import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GearmanProtocolError } from '../../../lib/errors.js';
import { argCount, encode, PacketDecoder, packetName, PacketType as T, type Packet } from '../../../lib/gearman/protocol.js';

const text = (p: Packet): string[] => p.args.map((a) => a.toString('utf8'));

/** A raw packet built by hand (independent of encode()). */
function raw(magic: string, type: number, body: Buffer | string): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body, 'latin1') : body;
  const h = Buffer.alloc(12);
  h.write(magic, 0, 'latin1');
  h.writeUInt32BE(type, 4);
  h.writeUInt32BE(b.length, 8);
  return Buffer.concat([h, b]);
}

void describe('encode', () => {
  void it('writes magic, type, length and NUL-separated arguments', () => {
    const buf = encode(T.SUBMIT_JOB, ['reverse', 'u-1', 'abc']);
    assert.deepEqual(buf, raw('\0REQ', 7, 'reverse\0u-1\0abc'));
  });

  void it('writes an empty body for argument-less packets and RES magic on request', () => {
    assert.deepEqual(encode(T.GRAB_JOB_UNIQ), raw('\0REQ', 30, ''));
    assert.deepEqual(encode(T.NOOP, [], 'RES'), raw('\0RES', 6, ''));
  });

  void it('keeps the last argument opaque, NULs included', () => {
    const data = Buffer.from([0, 1, 0, 2, 255]);
    const buf = encode(T.WORK_COMPLETE, ['H:x:1', data]);
    assert.equal(buf.readUInt32BE(8), 'H:x:1'.length + 1 + data.length);
    const [p] = new PacketDecoder().push(buf);
    assert.deepEqual(p?.args[1], data);
  });

  void it('rejects a NUL inside a separator-delimited argument', () => {
    assert.throws(() => encode(T.SUBMIT_JOB, ['fn\0x', '', 'd']), GearmanProtocolError);
  });

  void it('rejects a wrong argument count for known types', () => {
    assert.throws(() => encode(T.CAN_DO, []), /CAN_DO takes 1 argument/);
  });

  void it('encodes strings and Buffers alike, multi-byte UTF-8 in separated arguments included', () => {
    const buf = encode(T.SUBMIT_JOB, ['größe', Buffer.from('ü'), 'daten'], 'REQ');
    assert.deepEqual(buf, raw('\0REQ', 7, Buffer.from('größe\0ü\0daten', 'utf8')));
    assert.throws(() => encode(T.SUBMIT_JOB, ['fn', Buffer.from([1, 0]), 'd']), /argument 1 contains a NUL/);
  });

  void it('encodes strings as UTF-8', () => {
    const [p] = new PacketDecoder().push(encode(T.CAN_DO, ['größe']));
    assert.equal(p?.args[0]?.toString('utf8'), 'größe');
  });
});

void describe('PacketDecoder', () => {
  void it('decodes a packet into named, counted arguments', () => {
    const [p] = new PacketDecoder().push(raw('\0RES', 31, 'H:p1:1\0fn\0uniq\0da\0ta'));
    assert.equal(p?.name, 'JOB_ASSIGN_UNIQ');
    assert.equal(p?.magic, 'RES');
    assert.deepEqual(text(p as Packet), ['H:p1:1', 'fn', 'uniq', 'da\0ta']);
  });

  void it('reassembles a packet split at every byte', () => {
    const whole = encode(T.JOB_ASSIGN_UNIQ, ['H:p1:7', 'fn', 'u', Buffer.from('payload')], 'RES');
    const d = new PacketDecoder();
    const got: Packet[] = [];
    for (let i = 0; i < whole.length; i++) got.push(...d.push(whole.subarray(i, i + 1)));
    assert.equal(got.length, 1);
    assert.deepEqual(text(got[0] as Packet), ['H:p1:7', 'fn', 'u', 'payload']);
    assert.equal(d.pendingBytes, 0);
  });

  void it('returns several packets from one chunk, and a tail split across chunks', () => {
    const a = encode(T.NOOP, [], 'RES');
    const b = encode(T.JOB_CREATED, ['H:p1:1'], 'RES');
    const c = encode(T.WORK_COMPLETE, ['H:p1:1', 'done'], 'RES');
    const all = Buffer.concat([a, b, c]);
    const d = new PacketDecoder();
    const first = d.push(all.subarray(0, a.length + b.length + 5));
    assert.deepEqual(first.map((p) => p.name), ['NOOP', 'JOB_CREATED']);
    const rest = d.push(all.subarray(a.length + b.length + 5));
    assert.deepEqual(rest.map((p) => p.name), ['WORK_COMPLETE']);
    assert.deepEqual(text(rest[0] as Packet), ['H:p1:1', 'done']);
  });

  void it('decodes a 4 MiB body delivered in 64 KiB chunks', () => {
    const data = Buffer.alloc(4 * 1024 * 1024, 7);
    const whole = encode(T.WORK_COMPLETE, ['H:p1:1', data], 'RES');
    const d = new PacketDecoder();
    const got: Packet[] = [];
    for (let i = 0; i < whole.length; i += 65536) got.push(...d.push(whole.subarray(i, i + 65536)));
    assert.equal(got.length, 1);
    assert.equal(got[0]?.args[1]?.length, data.length);
    assert.ok(got[0]?.args[1]?.equals(data));
  });

  void it('rejects bad magic, and stays failed', () => {
    const d = new PacketDecoder();
    assert.throws(() => d.push(Buffer.from('status\n\0\0\0\0\0\0')), (e: unknown) => e instanceof GearmanProtocolError && /bad magic/.test(e.message));
    assert.throws(() => d.push(encode(T.NOOP, [], 'RES')), GearmanProtocolError);
    d.reset();
    assert.equal(d.push(encode(T.NOOP, [], 'RES')).length, 1);
  });

  void it('rejects the other side\'s magic when told which to accept', () => {
    assert.throws(() => new PacketDecoder({ accept: 'RES' }).push(encode(T.CAN_DO, ['f'])), /expected \\0RES/);
    assert.equal(new PacketDecoder({ accept: 'REQ' }).push(encode(T.CAN_DO, ['f'])).length, 1);
  });

  void it('rejects a packet larger than the limit from its header alone', () => {
    const d = new PacketDecoder({ maxPacketBytes: 10 });
    assert.throws(() => d.push(raw('\0RES', 13, 'H:1\0more than ten')), /exceeds the 10-byte limit/);
  });

  void it('strips gearmand\'s trailing NUL from a WORK_FAIL handle', () => {
    const [p] = new PacketDecoder().push(raw('\0RES', 14, 'H:p4791:1\0'));
    assert.equal(p?.name, 'WORK_FAIL');
    assert.deepEqual(text(p as Packet), ['H:p4791:1']);
  });

  void it('leaves NULs inside opaque payloads alone', () => {
    const [p] = new PacketDecoder().push(raw('\0RES', 13, 'H:1\0data\0'));
    assert.deepEqual(text(p as Packet), ['H:1', 'data\0']);
  });

  void it('pads missing arguments instead of throwing', () => {
    const [p] = new PacketDecoder().push(raw('\0RES', 19, 'ONLY_CODE'));
    assert.deepEqual(text(p as Packet), ['ONLY_CODE', '']);
  });

  void it('passes unknown types through with the body as one argument', () => {
    const [p] = new PacketDecoder().push(raw('\0RES', 999, 'a\0b'));
    assert.equal(p?.name, 'UNKNOWN_999');
    assert.deepEqual(text(p as Packet), ['a\0b']);
  });

  void it('decodes a stream of mixed packets the same however it is cut', () => {
    const big = Buffer.alloc(70_000, 9);
    const stream = Buffer.concat([
      encode(T.NOOP, [], 'RES'),
      raw('\0RES', 19, 'NO_NUL_HERE'), // missing argument: the scan must stop at this packet's end
      encode(T.JOB_ASSIGN_UNIQ, ['H:p1:2', 'fn', '', Buffer.from('a\0b')], 'RES'),
      raw('\0RES', 14, 'H:p1:2\0'),
      encode(T.WORK_COMPLETE, ['H:p1:3', big], 'RES'),
      encode(T.NO_JOB, [], 'RES'),
      encode(T.WORK_DATA, ['H:p1:4', ''], 'RES'),
    ]);
    const expected = [
      ['NOOP'],
      ['ERROR', 'NO_NUL_HERE', ''],
      ['JOB_ASSIGN_UNIQ', 'H:p1:2', 'fn', '', 'a\0b'],
      ['WORK_FAIL', 'H:p1:2'],
      ['WORK_COMPLETE', 'H:p1:3', `big:${big.length}`],
      ['NO_JOB'],
      ['WORK_DATA', 'H:p1:4', ''],
    ];
    const show = (p: Packet): string[] => [p.name, ...p.args.map((a) => (a.length === big.length ? `big:${a.length}` : a.toString('utf8')))];
    let seed = 42;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let trial = 0; trial < 200; trial++) {
      const d = new PacketDecoder({ accept: 'RES' });
      const got: Packet[] = [];
      for (let pos = 0; pos < stream.length;) {
        const size = 1 + random(trial % 2 ? 40 : 20_000);
        got.push(...d.push(stream.subarray(pos, pos + size)));
        pos += size;
      }
      assert.deepEqual(got.map(show), expected, `trial ${trial}`);
      assert.equal(d.pendingBytes, 0);
    }
  });

  void it('ignores a body on argument-less packets', () => {
    const [p] = new PacketDecoder().push(raw('\0RES', 6, 'junk'));
    assert.deepEqual(p?.args, []);
  });
});

void describe('packet table', () => {
  void it('names types and counts their arguments', () => {
    assert.equal(packetName(T.GRAB_JOB_UNIQ), 'GRAB_JOB_UNIQ');
    assert.equal(argCount(T.STATUS_RES), 5);
    assert.equal(argCount(T.JOB_ASSIGN_UNIQ), 4);
    assert.equal(argCount(T.NO_JOB), 0);
  });
});
