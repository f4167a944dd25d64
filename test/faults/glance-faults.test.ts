import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { recordFault } from '../support/fault-report.js';
import { FaultSystem } from '../support/fault-system.js';
import type { UploadFault } from '../support/glance-fault-proxy.js';
import { runningProcesses } from '../support/processes.js';

interface GlanceCase {
  scenario: string;
  fault: UploadFault;
  runs: number;
  provider?: Record<string, unknown>;
  /** Release a held upload once this many victim uploads have failed. */
  releaseAfterFailures?: number;
}

const CASES: GlanceCase[] = [
  { scenario: 'Glance answers 500 to the image upload', fault: { kind: 'status', status: 500, times: 2 }, runs: 2 },
  { scenario: 'Glance connection closed mid-upload', fault: { kind: 'close', afterBytes: 1024 * 1024, times: 2 }, runs: 2 },
  {
    scenario: 'Glance stalls an upload past image-upload-timeout', fault: { kind: 'hold', afterBytes: 1024 * 1024 }, runs: 1,
    provider: { 'image-upload-timeout': 3 }, releaseAfterFailures: 1,
  },
];

describe('faults: Glance fails uploads', () => {
  let sys: FaultSystem | undefined;

  afterEach(async () => {
    await sys?.stop();
    sys = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  for (const c of CASES) {
    it(`${c.scenario}: the upload is retried to ready, any failure has a clear reason, and Glance keeps no partial image`, async () => {
      sys = await FaultSystem.start({ provider: c.provider });
      sys.proxy.match = (name) => name?.startsWith('victim-') ?? false;
      sys.proxy.fault = { ...c.fault };
      await sys.startBuilder();
      sys.startServer();
      const base = await sys.waitForState('base built and uploaded', (s) => s.uploads.some((u) => u.diskimage === 'base' && u.state === 'ready'));
      const before = { builds: base.builds.filter((b) => b.state === 'ready').map((b) => b.id), uploads: base.uploads.filter((u) => u.state === 'ready').map((u) => u.id) };
      if (c.releaseAfterFailures) {
        await sys.waitForState('the stalled upload failed', (s) => s.uploads.filter((u) => u.diskimage === 'victim' && u.state === 'failed').length >= c.releaseAfterFailures!, 60_000);
        sys.proxy.release();
      }
      let recovered = 0;
      let stuck: Error | undefined;
      try {
        await sys.settled(90_000);
        recovered = 1;
      } catch (err) {
        stuck = err as Error;
      }
      const t0 = Math.min(...sys.proxy.uploads.filter((u) => u.name?.startsWith('victim-')).map((u) => u.at));
      const recoverMs = Date.now() - t0;
      const failures = [...sys.failedUploadsSeen.values()].filter((u) => u.diskimage === 'victim');
      const audit = await sys.audit(before);
      recordFault({
        scenario: c.scenario, runs: c.runs, recovered: recovered * c.runs, lost: audit.lost, leaked: audit.leaked, recoverMs: recovered ? recoverMs : null,
        notes: failures.length ? `failed upload said: ${(failures[0]?.reason ?? '').replace(/\s+/g, ' ').slice(0, 160)}` : 'retried within the upload job (no failed record)',
      });
      assert.equal(stuck, undefined, `${c.scenario}: recovered: ${stuck?.message}`);
      const faulted = sys.proxy.uploads.filter((u) => u.name?.startsWith('victim-') && u.outcome !== 'forwarded').length;
      assert.ok(faulted >= c.runs, `the fault hit ${faulted} victim uploads (wanted ${c.runs})`);
      for (const f of failures) assert.ok(f.reason && !/TypeError|Cannot read|undefined/.test(f.reason), `a clear reason: ${f.reason}`);
      assert.deepEqual(audit.details, []);
    });
  }
});
