/**
 * The write API's answers: JSON, never cached, and a 401 that names the scheme it wants.
 */
import type { Answer } from '../routes.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** A JSON answer (`Cache-Control: no-store`; with `WWW-Authenticate: Bearer` on a 401). */
export function jsonAnswer(status: number, value: unknown, headers: Record<string, string> = {}): Answer {
  return {
    status, contentType: JSON_TYPE, body: `${JSON.stringify(value, null, 2)}\n`,
    headers: { 'Cache-Control': 'no-store', ...(status === 401 ? { 'WWW-Authenticate': 'Bearer' } : {}), ...headers },
  };
}

/** What went wrong besides an action's refusal: `{ ok: false, error, message }`. */
export function errorAnswer(status: number, error: string, message: string, headers?: Record<string, string>): Answer {
  return jsonAnswer(status, { ok: false, error, message }, headers);
}

/** The `error` word of a status the API answers without running the action. */
export function errorWord(status: number): string {
  switch (status) {
    case 401: return 'unauthorized';
    case 403: return 'forbidden';
    case 413: return 'body-too-large';
    case 415: return 'unsupported-media-type';
    case 400: return 'bad-request';
    default: return 'internal';
  }
}
