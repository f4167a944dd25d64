/**
 * Logging: one winston root logger, built in bin/ and passed down; components take
 * `log.child({ component })`, jobs add `{ job, diskimage, buildId }`.
 */
import winston from 'winston';
import { escapeControlChars } from './outside-text.js';
import { processSecrets, type SecretRegistry } from './redact.js';

export type Logger = winston.Logger;

/** Options of {@link createRootLogger}. */
export interface RootLoggerOptions {
  level?: string;
  /** `json` for machines, `pretty` for a terminal. */
  format?: 'json' | 'pretty';
  /** Where lines go; defaults to stderr so stdout stays free for command output. */
  stream?: NodeJS.WritableStream;
  /** Extra metadata on every line, e.g. `{ process: 'nodepool-builder' }`. */
  defaultMeta?: Record<string, unknown>;
  /** Secrets no line may carry (default: the process's, {@link processSecrets}). */
  secrets?: SecretRegistry;
}

/**
 * A copy of `v` with every known secret in its strings replaced and every control character
 * escaped (depth-bounded; cycles end as they are).
 */
function cleanValue(v: unknown, secrets: SecretRegistry, depth: number): unknown {
  if (typeof v === 'string') return escapeControlChars(secrets.scrub(v));
  if (depth > 6 || typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) return v.map((x) => cleanValue(x, secrets, depth + 1));
  if (v instanceof Error) return escapeControlChars(secrets.scrub(v.stack ?? v.message));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[escapeControlChars(k)] = cleanValue(x, secrets, depth + 1);
  return out;
}

/**
 * A winston format that makes every line safe to write: each known secret (a clouds.yaml
 * password, a Keystone token) in the message and metadata becomes `<redacted>`, the last guard
 * whatever path a secret took into an error message; and each control character (a `%0a` or
 * ESC from a URL path, an operator's reason, a cloud's answer) is escaped
 * (lib/outside-text.ts), so no value can forge a log line or drive the reader's terminal.
 */
export function scrubSecrets(secrets: SecretRegistry = processSecrets): winston.Logform.Format {
  return winston.format((info) => {
    const rec = info as unknown as Record<string, unknown>;
    for (const key of Object.keys(rec)) rec[key] = cleanValue(rec[key], secrets, 0);
    return info;
  })();
}

const pretty = winston.format.printf((info) => {
  const { level, message, timestamp, component, ...rest } = info as Record<string, unknown>;
  const meta = Object.entries(rest).filter(([k]) => typeof k === 'string' && !k.startsWith('Symbol('));
  // Values were escaped by scrubSecrets; escaped again here for what a format after it added.
  const metaText = meta.length ? ' ' + meta.map(([k, v]) => `${k}=${typeof v === 'string' ? escapeControlChars(v) : JSON.stringify(v)}`).join(' ') : '';
  return `${String(timestamp)} ${String(level)} ${component ? `[${escapeControlChars(String(component))}] ` : ''}${escapeControlChars(String(message))}${metaText}`;
});

/** Builds the process's root logger. */
export function createRootLogger(opts: RootLoggerOptions = {}): Logger {
  const scrub = scrubSecrets(opts.secrets);
  const format = opts.format === 'json'
    ? winston.format.combine(winston.format.timestamp(), winston.format.errors({ stack: true }), scrub, winston.format.json())
    : winston.format.combine(winston.format.timestamp(), winston.format.errors({ stack: true }), scrub, pretty);
  return winston.createLogger({
    level: opts.level ?? 'info',
    format,
    defaultMeta: opts.defaultMeta,
    transports: [new winston.transports.Stream({ stream: opts.stream ?? process.stderr })],
  });
}

/** A logger that drops everything (for library users that pass none). */
export function silentLogger(): Logger {
  return winston.createLogger({ silent: true, transports: [new winston.transports.Console({ silent: true })] });
}
