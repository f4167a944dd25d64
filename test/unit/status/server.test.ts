import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serverDownText, serverFailingText, serverLiveness } from '../../../lib/status/server.js';

const NOW = 1_700_000_000_000;
const heartbeat = (ageMs: number, interval = 10) => ({
  value: { pid: 4242, hostname: 'np1', started: NOW - 3_600_000, interval },
  updated: NOW - ageMs,
});

describe('serverLiveness', () => {
  it('counts a server alive while its heartbeat is at most three intervals old', () => {
    assert.equal(serverLiveness(heartbeat(29_000), NOW).alive, true);
    assert.equal(serverLiveness(heartbeat(30_000), NOW).alive, true);
    assert.equal(serverLiveness(heartbeat(30_001), NOW).alive, false);
  });

  it('scales the limit with the heartbeat interval', () => {
    assert.equal(serverLiveness(heartbeat(100_000, 60), NOW).alive, true);
  });

  it('says when and where the server was last seen', () => {
    const l = serverLiveness(heartbeat(5 * 60_000 + 12_000), NOW);
    assert.equal(serverDownText(l), 'no nodepool-server is running (last seen 00:00:05:12 ago, pid 4242 on np1)');
  });

  it('reports a server never seen when there is no heartbeat', () => {
    const l = serverLiveness(undefined, NOW);
    assert.equal(l.alive, false);
    assert.equal(serverDownText(l), 'no nodepool-server is running (last seen: never)');
  });

  it('names the loops whose passes fail, and says nothing when every pass succeeds', () => {
    const loop = (name: string, consecutiveFailures: number, lastError: string | null) => ({ name, passes: 9, consecutiveFailures, lastPass: NOW, lastSuccess: null, lastError });
    const hb = { ...heartbeat(1000), value: { ...heartbeat(1000).value, loops: [loop('deleter', 0, null), loop('image-lifecycle', 3, 'disk I/O error'), loop('cleanup', 1, null)] } };
    assert.equal(serverFailingText(serverLiveness(hb, NOW)),
      'nodepool-server is running but its passes fail: image-lifecycle: 3 failed passes in a row (last: disk I/O error); cleanup: 1 failed pass in a row (last: unknown error)');
    assert.equal(serverFailingText(serverLiveness(heartbeat(1000), NOW)), null, 'an older server without loops');
    assert.equal(serverLiveness({ ...hb, updated: NOW - 60_000 }, NOW).failing, null, 'a dead server is reported as down instead');
  });

  it('names a loop whose pass runs past its bound, whichever loop refreshed the heartbeat', () => {
    const loop = (name: string, runningSince: number | null) => ({
      name, passes: 9, consecutiveFailures: 0, lastPass: NOW - 1000, lastSuccess: NOW - 1000, lastError: null, runningSince, deadlineMs: 300_000,
    });
    // The heartbeat is one second old (the cleanup loop's passes refresh it); the deleter's pass hangs for 12 minutes.
    const hb = { ...heartbeat(1000), value: { ...heartbeat(1000).value, loops: [loop('deleter', NOW - 12 * 60_000), loop('cleanup', null)] } };
    const l = serverLiveness(hb, NOW);
    assert.equal(l.alive, true);
    assert.equal(l.failing, null);
    assert.equal(serverFailingText(l), 'nodepool-server is running but a pass is stuck: deleter: pass running for 00:00:12:00, past its bound of 00:00:05:00');
    const busy = { ...hb, value: { ...hb.value, loops: [loop('deleter', NOW - 60_000)] } };
    assert.equal(serverFailingText(serverLiveness(busy, NOW)), null, 'a pass within its bound is only busy');
  });
});
