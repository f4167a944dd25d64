/**
 * Types shared by the Gearman connection, client, worker and admin modules. client.ts and
 * worker.ts re-export the ones their users need.
 */
import type { Logger } from '../log.js';

/** TLS settings for a gearmand connection. PEM contents, not file paths. */
export interface GearmanTlsOptions {
  /** CA certificate(s) to trust instead of the system store. */
  ca?: string;
  /** Client certificate, when gearmand asks for one. */
  cert?: string;
  /** Key of the client certificate. */
  key?: string;
  /** Verify the server certificate (default true). */
  rejectUnauthorized?: boolean;
  /** SNI / certificate name to check; default: the host when it is a name, none for an IP. */
  servername?: string;
}

/** One gearmand to talk to. */
export interface GearmanServerAddress {
  host: string;
  port: number;
  /** `true` for TLS with the system CAs, or explicit TLS settings; absent/false for cleartext. */
  tls?: boolean | GearmanTlsOptions;
}

/** Reconnect backoff: capped exponential with jitter. */
export interface ReconnectOptions {
  /** First delay after a lost or failed connection (default 100 ms). */
  initialMs?: number;
  /** Cap of the delay (default 5000 ms). */
  maxMs?: number;
}

/** Default reconnect backoff. */
export const DEFAULT_RECONNECT: Required<ReconnectOptions> = { initialMs: 100, maxMs: 5000 };

/** Gearman's largest unique id in bytes (gearmand truncates 64 bytes and rejects 65+). */
export const MAX_UNIQUE_BYTES = 63;

/** `host:port` of a server, for logs and error messages. */
export function serverLabel(server: GearmanServerAddress): string {
  const host = server.host.includes(':') ? `[${server.host}]` : server.host;
  return `${host}:${server.port}${server.tls ? ' (tls)' : ''}`;
}

/**
 * How a worker's job ended. Only the worker sends the matching packets:
 * `complete` → WORK_COMPLETE with `data`; `fail` → WORK_WARNING(message) (when given) then
 * WORK_FAIL, which has no payload; `exception` → WORK_EXCEPTION with the message as data.
 */
export type JobOutcome =
  | { type: 'complete'; data?: string | Buffer }
  | { type: 'fail'; message?: string }
  | { type: 'exception'; message: string };

/** A job as its handler sees it. */
export interface WorkerJob {
  handle: string;
  functionName: string;
  unique: string;
  data: Buffer;
  /** Aborted when the job's server connection is lost, or when stop({ abortAfterMs }) expires. */
  signal: AbortSignal;
  /** WORK_STATUS (progress `numerator/denominator`). Ignored after the job ended or its connection was lost. */
  sendStatus(numerator: number, denominator: number): void;
  /** WORK_DATA (intermediate data to the submitter). */
  sendData(data: string | Buffer): void;
  /** WORK_WARNING. */
  sendWarning(data: string | Buffer): void;
}

// ------------------------------------------------------------------ worker

/** A job handler. A throw or rejection becomes WORK_EXCEPTION with `err.stack ?? err.message`. */
export type JobHandler = (job: WorkerJob) => Promise<JobOutcome>;

/** Options of {@link GearmanWorker}. */
export interface GearmanWorkerOptions {
  servers: GearmanServerAddress[];
  /** Sent as SET_CLIENT_ID on every (re)connect; gearmand's `workers` shows "-" without it. */
  clientId?: string;
  /** Max jobs in flight at once across all servers (default 1). */
  concurrency?: number;
  log?: Logger;
  reconnect?: ReconnectOptions;
  /**
   * gearmand answers GRAB_JOB_UNIQ at once; a connection that leaves one unanswered this long
   * (a silently dead peer) is dropped and reconnected, so it cannot hold the concurrency slot
   * (default 30 000 ms).
   */
  grabTimeoutMs?: number;
}

/** Options of {@link GearmanWorker.stop}. */
export interface WorkerStopOptions {
  /** Abort the signals of jobs still running after this long (default: wait for them forever). */
  abortAfterMs?: number;
  /** After aborting, wait this much longer for handlers to settle before closing (default 10 000 ms). */
  abortGraceMs?: number;
}

/** What `job:start` / `job:end` listeners learn about a job. */
export interface WorkerJobInfo { handle: string; functionName: string; unique: string; server: string }

/** Events of {@link GearmanWorker}. */
export interface GearmanWorkerEvents {
  'job:start': [job: WorkerJobInfo];
  /** `delivered` is false when the result could not be sent (connection lost meanwhile). */
  'job:end': [job: WorkerJobInfo, outcome: JobOutcome, delivered: boolean];
  /** Connected and (re-)registered on a server. */
  'server:connected': [server: string];
  'server:disconnected': [server: string, reason: Error];
}

// ------------------------------------------------------------------ client

/** The end of a foreground job as seen by the submitter. */
export type JobResult =
  | { type: 'complete'; data: Buffer; warnings: Buffer[] }
  /** WORK_FAIL; the worker's message, if any, arrived as WORK_WARNINGs. */
  | { type: 'fail'; warnings: Buffer[] }
  | { type: 'exception'; data: Buffer; warnings: Buffer[] };

/** Options of {@link GearmanClient.submit}. */
export interface SubmitOptions {
  /** Gearman unique id (≤ 63 bytes); gearmand coalesces queued jobs with the same function + unique. */
  unique?: string;
  /** SUBMIT_JOB_BG: `result` resolves as soon as the job is created. */
  background?: boolean;
  priority?: 'normal' | 'high' | 'low';
  onStatus?(numerator: number, denominator: number): void;
  onData?(data: Buffer): void;
  onWarning?(data: Buffer): void;
  /** How long to wait for JOB_CREATED, including time queued while no server is up (default 30 000 ms). */
  createdTimeoutMs?: number;
}

/** A submitted job. Both promises are pre-handled: awaiting only one of them is safe. */
export interface SubmittedJob {
  /** The job handle, once gearmand created the job. */
  handle: Promise<string>;
  /** The outcome; rejects with GearmanConnectionError (connection lost, stopped, timeout) or GearmanServerError. */
  result: Promise<JobResult>;
}

/** Options of {@link GearmanClient}. */
export interface GearmanClientOptions {
  servers: GearmanServerAddress[];
  /** Sent as SET_CLIENT_ID on every connect (shows in gearmand's `workers` list). */
  clientId?: string;
  log?: Logger;
  reconnect?: ReconnectOptions;
}

/** Result of {@link GearmanClient.getStatus}. */
export interface JobStatus { known: boolean; running: boolean; numerator: number; denominator: number }

/** Events of {@link GearmanClient}. */
export interface GearmanClientEvents {
  'server:connected': [server: string];
  'server:disconnected': [server: string, reason: Error];
}
