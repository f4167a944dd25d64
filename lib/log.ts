/**
 * Logging: one winston root logger, built in bin/ and passed down; components take
 * `log.child({ component })`, jobs add `{ job, diskimage, buildId }`.
 */
import winston from 'winston';

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
}

const pretty = winston.format.printf((info) => {
  const { level, message, timestamp, component, ...rest } = info as Record<string, unknown>;
  const meta = Object.entries(rest).filter(([k]) => typeof k === 'string' && !k.startsWith('Symbol('));
  const metaText = meta.length ? ' ' + meta.map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' ') : '';
  return `${String(timestamp)} ${String(level)} ${component ? `[${String(component)}] ` : ''}${String(message)}${metaText}`;
});

/** Builds the process's root logger. */
export function createRootLogger(opts: RootLoggerOptions = {}): Logger {
  const format = opts.format === 'json'
    ? winston.format.combine(winston.format.timestamp(), winston.format.errors({ stack: true }), winston.format.json())
    : winston.format.combine(winston.format.timestamp(), winston.format.errors({ stack: true }), pretty);
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
