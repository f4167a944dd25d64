#!/usr/bin/env node
/**
 * nodepool-server: not built yet — the image lifecycle and launcher arrive with the next
 * issues. Until then it validates its config and says so, instead of pretending to run.
 */
import { loadConfig } from '../lib/config/load.js';
import { ConfigError } from '../lib/errors.js';

const file = process.argv[3] ?? process.env.NODEPOOL_CONFIG ?? '/etc/nodepool/nodepool.yaml';
try {
  loadConfig(file);
} catch (err) {
  process.stderr.write(`${err instanceof ConfigError ? err.message : String(err)}\n`);
  process.exit(2);
}
process.stderr.write('nodepool-server: the image lifecycle and launcher are not implemented yet (see the issues)\n');
process.exit(3);
