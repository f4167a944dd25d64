/**
 * What a GearmanWorker knows about one gearmand: its connection, where the grab loop stands
 * (GRAB_JOB_UNIQ → NO_JOB → PRE_SLEEP → NOOP → GRAB…) and the CANT_DOs that wait for running
 * jobs; plus the argument-less packets of that loop and reading a packet's text arguments.
 */
import type { GearmanConnection } from './connection.js';
import { encode, PacketType as T, type Packet } from './protocol.js';

/** One server's state as seen by the worker. */
export interface WorkerServer {
  conn: GearmanConnection;
  /** The server may have work for us (not sent PRE_SLEEP since the last NOOP/assignment). */
  awake: boolean;
  /** A GRAB_JOB_UNIQ awaits its NO_JOB / JOB_ASSIGN_UNIQ. */
  grabbing: boolean;
  /** When the outstanding grab was sent (for the watchdog). */
  grabSentAt: number;
  /** Functions unregistered while a job of theirs runs on this connection: CANT_DO waits for its end. */
  cantDoPending: Set<string>;
}

/** Argument-less packets sent once or twice per job: encoded once (never mutated). */
export const GRAB_JOB_UNIQ = encode(T.GRAB_JOB_UNIQ);
export const PRE_SLEEP = encode(T.PRE_SLEEP);
export const EMPTY = Buffer.alloc(0);

/** Argument `i` of `p` as UTF-8 text ('' when absent). */
export function packetArg(p: Packet, i: number): string {
  return (p.args[i] ?? EMPTY).toString('utf8');
}
