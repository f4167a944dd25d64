/**
 * What a node request a backend creates carries beyond the caller's fields, the same in every
 * backend: Nodepool sets `event_id` to a `uuid4().hex` when its creator gave none, and Zuul
 * reads `event_id` of every request (subscript access: a request without one breaks it).
 */
import { randomUUID } from 'node:crypto';

/** A new request's `event_id`: 32 lowercase hex digits, as Python's `uuid4().hex`. */
export function newEventId(): string {
  return randomUUID().replace(/-/g, '');
}
