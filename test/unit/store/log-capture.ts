/**
 * Test support for the store's unit tests: a winston logger whose entries are kept in memory,
 * to see what a store reported (a corrupt record skipped, once).
 */
import { Writable } from 'node:stream';
import winston from 'winston';
import type { Logger } from '../../../lib/log.js';

/** A logger and the entries it took, as parsed JSON. */
export function capturingLogger(): { log: Logger; entries: Array<Record<string, unknown>> } {
  const entries: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      entries.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  return { log: winston.createLogger({ level: 'debug', format: winston.format.json(), transports: [new winston.transports.Stream({ stream })] }), entries };
}
