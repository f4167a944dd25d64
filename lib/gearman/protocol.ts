/**
 * The Gearman binary protocol as a pure codec: the packet type table, `encode()` and a
 * streaming {@link PacketDecoder}. No I/O here. The admin text protocol lives in admin.ts.
 *
 * Wire format: 4-byte magic (`\0REQ` or `\0RES`), 4-byte big-endian type, 4-byte big-endian
 * data length, then the arguments separated by NUL bytes; the last argument is opaque binary
 * and may itself contain NULs.
 */
import { GearmanProtocolError } from '../errors.js';

/** Packet type codes (the subset this project speaks, plus the rest for logging). */
export const PacketType = {
  CAN_DO: 1,
  CANT_DO: 2,
  RESET_ABILITIES: 3,
  PRE_SLEEP: 4,
  NOOP: 6,
  SUBMIT_JOB: 7,
  JOB_CREATED: 8,
  GRAB_JOB: 9,
  NO_JOB: 10,
  JOB_ASSIGN: 11,
  WORK_STATUS: 12,
  WORK_COMPLETE: 13,
  WORK_FAIL: 14,
  GET_STATUS: 15,
  ECHO_REQ: 16,
  ECHO_RES: 17,
  SUBMIT_JOB_BG: 18,
  ERROR: 19,
  STATUS_RES: 20,
  SUBMIT_JOB_HIGH: 21,
  SET_CLIENT_ID: 22,
  CAN_DO_TIMEOUT: 23,
  ALL_YOURS: 24,
  WORK_EXCEPTION: 25,
  OPTION_REQ: 26,
  OPTION_RES: 27,
  WORK_DATA: 28,
  WORK_WARNING: 29,
  GRAB_JOB_UNIQ: 30,
  JOB_ASSIGN_UNIQ: 31,
  SUBMIT_JOB_HIGH_BG: 32,
  SUBMIT_JOB_LOW: 33,
  SUBMIT_JOB_LOW_BG: 34,
  SUBMIT_JOB_SCHED: 35,
  SUBMIT_JOB_EPOCH: 36,
  SUBMIT_REDUCE_JOB: 37,
  SUBMIT_REDUCE_JOB_BACKGROUND: 38,
  GRAB_JOB_ALL: 39,
  JOB_ASSIGN_ALL: 40,
  GET_STATUS_UNIQUE: 41,
  STATUS_RES_UNIQUE: 42,
} as const;

/** A packet type name, e.g. `'JOB_ASSIGN_UNIQ'`. */
export type PacketName = keyof typeof PacketType;
/** A packet type code, e.g. `31`. */
export type PacketTypeCode = (typeof PacketType)[PacketName];
/** Which side sent a packet: `REQ` (client/worker → server) or `RES` (server → client/worker). */
export type Magic = 'REQ' | 'RES';

/** Number of arguments per packet type; the last one is opaque (may contain NULs). */
const ARG_COUNTS: Readonly<Record<number, number>> = {
  1: 1, 2: 1, 3: 0, 4: 0, 6: 0, 7: 3, 8: 1, 9: 0, 10: 0, 11: 3, 12: 3, 13: 2, 14: 1, 15: 1, 16: 1,
  17: 1, 18: 3, 19: 2, 20: 5, 21: 3, 22: 1, 23: 2, 24: 0, 25: 2, 26: 1, 27: 1, 28: 2, 29: 2, 30: 0,
  31: 4, 32: 3, 33: 3, 34: 3, 35: 8, 36: 4, 37: 4, 38: 4, 39: 0, 40: 5, 41: 1, 42: 6,
};

/**
 * Packets whose only argument is a job handle. gearmand 1.1.20 appends a NUL to the handle of
 * the WORK_FAIL it sends in place of WORK_EXCEPTION to clients without the `exceptions` option;
 * trailing NULs are stripped from these.
 */
const HANDLE_ONLY = new Set<number>([PacketType.JOB_CREATED, PacketType.WORK_FAIL, PacketType.GET_STATUS]);

const NAMES: Readonly<Record<number, PacketName>> = Object.fromEntries(
  Object.entries(PacketType).map(([name, code]) => [code, name as PacketName]),
);

/** The magic bytes `\0REQ` and `\0RES` read as one big-endian word. */
const MAGIC_REQ_WORD = 0x00524551;
const MAGIC_RES_WORD = 0x00524553;
const HEADER_BYTES = 12;
const EMPTY = Buffer.alloc(0);

/** Default largest packet body accepted by the decoder (64 MiB). */
export const DEFAULT_MAX_PACKET_BYTES = 64 * 1024 * 1024;

/** One decoded packet. */
export interface Packet {
  magic: Magic;
  /** Type code; may be a code not in {@link PacketType}. */
  type: number;
  /** Type name, or `UNKNOWN_<code>` for codes this table does not know. */
  name: PacketName | `UNKNOWN_${number}`;
  /** Arguments per the type's argument count; unknown types carry the whole body as one argument. */
  args: Buffer[];
}

/** The packet name for a type code (`UNKNOWN_<code>` when not in the table). */
export function packetName(type: number): PacketName | `UNKNOWN_${number}` {
  return NAMES[type] ?? `UNKNOWN_${type}`;
}

/** The number of arguments a packet type carries (1 for unknown types). */
export function argCount(type: number): number {
  return ARG_COUNTS[type] ?? 1;
}

/**
 * Encodes one packet. Strings are UTF-8. Every argument but the last must be free of NUL bytes
 * (they are separators); the last is opaque.
 * @throws GearmanProtocolError when a non-final argument contains a NUL, or the count is wrong.
 */
export function encode(type: PacketTypeCode | number, args: ReadonlyArray<string | Buffer> = [], magic: Magic = 'REQ'): Buffer {
  const n = args.length;
  const expected = ARG_COUNTS[type];
  if (expected !== undefined && n !== expected) {
    throw new GearmanProtocolError(`${packetName(type)} takes ${expected} argument(s), got ${n}`);
  }
  // strings are written straight into the packet (no intermediate Buffer per argument); a
  // string holds U+0000 exactly when its UTF-8 bytes hold a NUL
  let bodyLength = n > 0 ? n - 1 : 0;
  for (let i = 0; i < n; i++) {
    const a = args[i] as string | Buffer;
    const isString = typeof a === 'string';
    if (i < n - 1 && (isString ? a.includes('\0') : a.includes(0))) {
      throw new GearmanProtocolError(`${packetName(type)} argument ${i} contains a NUL byte`);
    }
    bodyLength += isString ? Buffer.byteLength(a, 'utf8') : a.length;
  }
  const out = Buffer.allocUnsafe(HEADER_BYTES + bodyLength);
  out.writeUInt32BE(magic === 'REQ' ? MAGIC_REQ_WORD : MAGIC_RES_WORD, 0);
  out.writeUInt32BE(type, 4);
  out.writeUInt32BE(bodyLength, 8);
  let pos = HEADER_BYTES;
  for (let i = 0; i < n; i++) {
    if (i > 0) out[pos++] = 0;
    const a = args[i] as string | Buffer;
    pos += typeof a === 'string' ? out.write(a, pos, 'utf8') : a.copy(out, pos);
  }
  return out;
}

/**
 * Splits `buf[start, end)` into the type's arguments (subarrays, no copies); missing arguments
 * come back empty (never throws).
 */
function splitArgs(type: number, buf: Buffer, start: number, end: number): Buffer[] {
  const count = argCount(type);
  if (count === 0) return [];
  const args: Buffer[] = [];
  let pos = start;
  for (let i = 0; i < count - 1; i++) {
    const nul = pos < end ? buf.indexOf(0, pos) : -1;
    if (nul < 0 || nul >= end) {
      args.push(buf.subarray(pos, end));
      pos = end;
    } else {
      args.push(buf.subarray(pos, nul));
      pos = nul + 1;
    }
  }
  if (HANDLE_ONLY.has(type)) {
    let last = end;
    while (last > pos && buf[last - 1] === 0) last--;
    args.push(buf.subarray(pos, last));
  } else {
    args.push(pos < end ? buf.subarray(pos, end) : EMPTY);
  }
  return args;
}

/** Options of {@link PacketDecoder}. */
export interface PacketDecoderOptions {
  /** Accept only this magic (`RES` on a client or worker); default: either. */
  accept?: Magic;
  /** Largest body accepted; default {@link DEFAULT_MAX_PACKET_BYTES}. */
  maxPacketBytes?: number;
}

/**
 * Streaming decoder: feed it socket chunks of any size, get whole packets back. A framing error
 * (bad magic, oversized packet) throws {@link GearmanProtocolError} and poisons the decoder: the
 * stream can no longer be trusted, so the connection must be dropped. Argument-count mismatches
 * are not framing errors: missing arguments decode as empty buffers.
 */
export class PacketDecoder {
  /** Bytes of an incomplete packet (its body only, once the header is parsed). */
  private chunks: Buffer[] = [];
  private buffered = 0;
  private failure: GearmanProtocolError | undefined;
  /** A header was parsed and its body is still arriving (fields below describe it). */
  private hasHeader = false;
  private magic: Magic = 'RES';
  private type = 0;
  private length = 0;
  private readonly accept: Magic | undefined;
  private readonly maxPacketBytes: number;

  constructor(opts: PacketDecoderOptions = {}) {
    this.accept = opts.accept;
    this.maxPacketBytes = opts.maxPacketBytes ?? DEFAULT_MAX_PACKET_BYTES;
  }

  /** Bytes received but not yet part of a whole packet. */
  get pendingBytes(): number {
    return this.buffered + (this.hasHeader ? HEADER_BYTES : 0);
  }

  /**
   * Adds a chunk and returns every packet completed by it (possibly none).
   * @throws GearmanProtocolError on bad magic or an oversized packet (and on every later call).
   */
  push(chunk: Buffer): Packet[] {
    if (this.failure) throw this.failure;
    const packets: Packet[] = [];
    // common case: nothing left over, so packets are cut straight out of the chunk
    if (this.buffered === 0 && !this.hasHeader) {
      this.parse(chunk, 0, packets);
      return packets;
    }
    if (chunk.length) {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
    }
    for (;;) {
      if (!this.hasHeader) {
        if (this.buffered < HEADER_BYTES) break;
        this.readHeader(this.take(HEADER_BYTES), 0);
        this.hasHeader = true;
      }
      if (this.buffered < this.length) break;
      this.hasHeader = false;
      const body = this.length ? this.take(this.length) : EMPTY;
      packets.push(this.packet(body, 0, body.length));
      if (this.chunks.length === 1) {
        // the rest is one chunk again: back to the straight path
        const rest = this.chunks[0] as Buffer;
        this.chunks = [];
        this.buffered = 0;
        this.parse(rest, 0, packets);
        break;
      }
    }
    return packets;
  }

  /** Drops buffered bytes and any failure (for a fresh connection). */
  reset(): void {
    this.chunks = [];
    this.buffered = 0;
    this.hasHeader = false;
    this.failure = undefined;
  }

  /** Cuts whole packets out of `buf` from `off`; keeps what is left of an incomplete one. */
  private parse(buf: Buffer, off: number, packets: Packet[]): void {
    const end = buf.length;
    while (end - off >= HEADER_BYTES) {
      this.readHeader(buf, off);
      const bodyStart = off + HEADER_BYTES;
      if (end - bodyStart < this.length) {
        this.hasHeader = true;
        if (bodyStart < end) this.keep(buf.subarray(bodyStart));
        return;
      }
      off = bodyStart + this.length;
      packets.push(this.packet(buf, bodyStart, off));
    }
    if (off < end) this.keep(off ? buf.subarray(off) : buf);
  }

  private keep(part: Buffer): void {
    this.chunks.push(part);
    this.buffered += part.length;
  }

  private packet(buf: Buffer, start: number, end: number): Packet {
    const type = this.type;
    return { magic: this.magic, type, name: packetName(type), args: splitArgs(type, buf, start, end) };
  }

  /** Reads and checks the 12-byte header at `off` into `magic`, `type` and `length`. */
  private readHeader(buf: Buffer, off: number): void {
    const word = buf.readUInt32BE(off);
    if (word === MAGIC_RES_WORD && this.accept !== 'REQ') this.magic = 'RES';
    else if (word === MAGIC_REQ_WORD && this.accept !== 'RES') this.magic = 'REQ';
    else {
      const shown = JSON.stringify(buf.subarray(off, off + 4).toString('latin1'));
      this.fail(`bad magic ${shown}${this.accept ? ` (expected \\0${this.accept})` : ''}`);
    }
    this.type = buf.readUInt32BE(off + 4);
    this.length = buf.readUInt32BE(off + 8);
    if (this.length > this.maxPacketBytes) {
      this.fail(`${packetName(this.type)} packet of ${this.length} bytes exceeds the ${this.maxPacketBytes}-byte limit`);
    }
  }

  private fail(message: string): never {
    this.failure = new GearmanProtocolError(message);
    this.chunks = [];
    this.buffered = 0;
    this.hasHeader = false;
    throw this.failure;
  }

  /** Consumes exactly `n` bytes (n ≤ buffered); concatenates once per packet, so large bodies stay linear. */
  private take(n: number): Buffer {
    const first = this.chunks[0] as Buffer;
    let out: Buffer;
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      const parts: Buffer[] = [];
      let need = n;
      while (need > 0) {
        const c = this.chunks[0] as Buffer;
        if (c.length <= need) {
          parts.push(c);
          this.chunks.shift();
          need -= c.length;
        } else {
          parts.push(c.subarray(0, need));
          this.chunks[0] = c.subarray(need);
          need = 0;
        }
      }
      out = Buffer.concat(parts, n);
    }
    this.buffered -= n;
    return out;
  }
}
