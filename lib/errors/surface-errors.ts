/** Errors at the project's surfaces: the web server's requests and builder fetches, and CLI commands. */
import { NodepoolError } from './nodepool-error.js';

/**
 * Thrown by a web request's `body()` (server/web/routes.ts) past its limit: the server answers
 * 413. Not retryable: the same body is as large again.
 */
export class BodyTooLargeError extends NodepoolError {
  constructor(readonly limit: number) {
    super(`request body over ${limit} bytes`);
  }
}

/**
 * Raised inside the build log proxy (server/web/build-logs/builder-fetch.ts) when a builder did
 * not accept a connection or answer in time; `why` follows "builder X " in the 504 answer.
 * Retryable: the builder may answer later.
 */
export class FetchTimeout extends NodepoolError {
  constructor(readonly why: string) {
    super(why);
  }

  override get retryable(): boolean {
    return true;
  }
}

/**
 * Thrown inside a CLI command (cli/commands/) to end it with one sentence on stderr and an
 * exit code. Not retryable: it is the command's verdict.
 */
export class CommandFailure extends NodepoolError {
  constructor(readonly exitCode: number, message: string) {
    super(message);
  }
}
