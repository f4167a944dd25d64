/**
 * Every write endpoint of the web API on a real SQLite store: roles, refused tokens and the
 * audit trail (endpoint-cases.ts).
 */
import { describeEndpoints } from './endpoint-cases.js';

describeEndpoints('write API on SQLite', () => ({}));
