import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { recordFault } from '../support/fault-report.js';
import { FaultSystem } from '../support/fault-system.js';
import { runningProcesses } from '../support/processes.js';

// Verified bytes (issue 14 §3): the proxy in front of Glance inverts one byte of the victim's
// first two uploads, so Glance stores (and hashes) other bytes than the builder sent.
const SCENARIO = 'Glance stores a byte altered in flight';
const RUNS = 2;

describe('faults: Glance hashes other bytes than were sent', () => {
  let sys: FaultSystem | undefined;

  afterEach(async () => {
    await sys?.stop();
    sys = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  it(`${SCENARIO}: each altered upload fails with the two hashes and is deleted, the next one is ready`, async () => {
    sys = await FaultSystem.start({});
    sys.proxy.match = (name) => name?.startsWith('victim-') ?? false;
    sys.proxy.fault = { kind: 'flip', atByte: 100_000, times: RUNS };
    await sys.startBuilder();
    sys.startServer();
    const base = await sys.waitForState('base built and uploaded', (s) => s.uploads.some((u) => u.diskimage === 'base' && u.state === 'ready'));
    const before = { builds: base.builds.filter((b) => b.state === 'ready').map((b) => b.id), uploads: base.uploads.filter((u) => u.state === 'ready').map((u) => u.id) };
    let stuck: Error | undefined;
    try {
      await sys.settled(90_000);
    } catch (err) {
      stuck = err as Error;
    }
    const t0 = Math.min(...sys.proxy.uploads.filter((u) => u.name?.startsWith('victim-')).map((u) => u.at));
    const failures = [...sys.failedUploadsSeen.values()].filter((u) => u.diskimage === 'victim');
    const audit = await sys.audit(before);
    recordFault({
      scenario: SCENARIO, runs: RUNS, recovered: stuck ? 0 : RUNS, lost: audit.lost, leaked: audit.leaked, recoverMs: stuck ? null : Date.now() - t0,
      notes: `failed upload said: ${(failures[0]?.reason ?? '').replace(/\s+/g, ' ').replace(/[0-9a-f]{128}/g, (h) => `${h.slice(0, 8)}…`).slice(0, 200)}`,
    });
    assert.equal(stuck, undefined, `${SCENARIO}: recovered: ${stuck?.message}`);
    assert.equal(sys.proxy.uploads.filter((u) => u.name?.startsWith('victim-') && u.outcome === 'altered').length, RUNS);
    assert.equal(failures.length, RUNS, 'one failed upload record per altered upload (a mismatch is not retried within the job)');
    for (const f of failures) assert.match(f.reason ?? '', /Glance's sha512 of image \S+ is [0-9a-f]{128}, the bytes sent hash to [0-9a-f]{128}; the image was deleted/);
    assert.deepEqual(audit.details, []);
  });
});
