/**
 * The statsd client against a real UDP listener on 127.0.0.1: the line protocol of counters,
 * timers and gauges, the prefix, and that a host that cannot be reached costs one warning.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../../lib/lifecycle.js';
import { silentLogger } from '../../../lib/log.js';
import { StatsdClient } from '../../../lib/metrics/statsd-client.js';
import { StatsdListener } from '../web/web-helpers.js';

describe('statsd client over UDP', () => {
  it('sends counters, timers and gauges in the statsd line protocol', async () => {
    const listener = await StatsdListener.start();
    const client = new StatsdClient({ host: '127.0.0.1', port: listener.port });
    try {
      client.incr('nodepool.launch.ready');
      client.incr('nodepool.launch.ready', 3);
      client.timing('nodepool.image_update.deb.cloud-a', 1234.6);
      client.gauge('nodepool.nodes.ready', 7);
      client.gauge('nodepool.nodes.deleting', -2);
      await waitFor(() => listener.lines.length === 5, { timeoutMs: 5000, what: 'five datagrams', intervalMs: 10 });
      assert.deepEqual([...listener.lines].sort(), [
        'nodepool.image_update.deb.cloud-a:1235|ms',
        'nodepool.launch.ready:1|c',
        'nodepool.launch.ready:3|c',
        'nodepool.nodes.deleting:0|g',
        'nodepool.nodes.ready:7|g',
      ]);
    } finally {
      client.close();
      client.close();
      await listener.close();
    }
  });

  it('puts the prefix before every name', async () => {
    const listener = await StatsdListener.start();
    const client = new StatsdClient({ host: '127.0.0.1', port: listener.port, prefix: 'site1' });
    try {
      client.incr('nodepool.launch.ready');
      await waitFor(() => listener.lines.length === 1, { timeoutMs: 5000, what: 'one datagram', intervalMs: 10 });
      assert.deepEqual(listener.lines, ['site1.nodepool.launch.ready:1|c']);
    } finally {
      client.close();
      await listener.close();
    }
  });

  it('warns once, and never throws, when the host cannot be resolved', async () => {
    const warnings: string[] = [];
    const log = silentLogger();
    log.warn = ((msg: string) => { warnings.push(msg); return log; }) as typeof log.warn;
    const client = new StatsdClient({ host: 'statsd.invalid', port: 8125, log });
    try {
      for (let i = 0; i < 5; i++) client.incr('nodepool.launch.ready');
      await waitFor(() => warnings.length > 0, { timeoutMs: 10_000, what: 'the warning', intervalMs: 20 });
      // An absence needs a window: the other look-ups fail within milliseconds of the first.
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(warnings.length, 1);
      assert.match(warnings[0] ?? '', /^statsd: could not send metrics/);
    } finally {
      client.close();
    }
  });
});
