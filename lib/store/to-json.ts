/**
 * JSON text of a value a store writes (a SQLite column, a znode's data), with the record named
 * when the value has none.
 */
import { StoreError } from '../errors.js';

/** Serialises a value for a JSON column. Thrown: StoreError when it has no JSON form. */
export function toJson(value: unknown, what: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    throw new StoreError(`${what} cannot be stored as JSON`, { cause });
  }
  if (text === undefined) throw new StoreError(`${what} cannot be stored as JSON (got ${typeof value})`);
  return text;
}
