/**
 * Upload progress through the real system: gearmand, the loopback Keystone+Glance (behind the
 * fault proxy, which holds the image upload at three quarters so the test sees it running), a
 * `nodepool-builder` and a `nodepool-server` process, and the CLI as a process.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../../lib/lifecycle.js';
import { SERVER_HEARTBEAT_KEY } from '../../../lib/status/lifecycle-status.js';
import { fakeDiskimage } from '../../support/builder-env.js';
import { FaultSystem } from '../../support/fault-system.js';
import { runningProcesses } from '../../support/processes.js';
import { startCli } from './cli-env.js';

const MiB = 1024 * 1024;
/** Raw is sent in full; at the loopback's few hundred MiB/s the first three quarters take long enough for two WORK_STATUS samples (a rate). */
const SIZE_MIB = 512;

/** Cells of a table line. */
function cells(line: string): string[] {
  return line.split('|').slice(1, -1).map((c) => c.trim());
}

describe('upload progress on the real system', () => {
  let sys: FaultSystem | undefined;

  afterEach(async () => {
    await sys?.stop();
    sys = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  it('image-list shows a running upload as bytes, percent and rate; image-build --follow follows the build and its upload to ready and exits 0', async () => {
    sys = await FaultSystem.start({ diskimages: [fakeDiskimage('big', { formats: ['raw'] }, { FAKE_DIB_SIZE_MIB: String(SIZE_MIB) })] });
    const s = sys;
    s.proxy.fault = { kind: 'hold', afterBytes: (SIZE_MIB * 3 / 4) * MiB };
    // The server first, with no builder: nothing can build `big` until the CLI has asked and is following.
    s.startServer();
    await waitFor(() => s.store.getStatus(SERVER_HEARTBEAT_KEY), { timeoutMs: 30_000, what: 'the server heartbeat' });
    const follow = startCli(s.serverConfigPath, ['image-build', 'big', '--follow', '--timeout', '240'], 300_000);
    try {
      await follow.waitForOutput(/Build of big requested\n/, 'the request');
      await s.startBuilder();
      await follow.waitForOutput(/Following build big-0000000001/, 'the build it follows', 60_000);
      await follow.waitForOutput(new RegExp(`Following 1 upload of big-0000000001: ${s.provider}\\n`), 'the upload it follows', 120_000);

      // Held by the proxy: the server has recorded bytes sent, total and a rate. The builder's
      // last sample arrives up to 250 ms after the stall and the server writes at most once a
      // second, so wait until the recorded bytes have not moved for 1.5 s.
      let seen = -1;
      let since = Date.now();
      const held = await s.waitForState('the upload held, its recorded progress settled, with a rate', (x) => {
        const u = x.uploads.find((v) => v.state === 'uploading' && (v.progress?.numerator ?? 0) > 0 && (v.progress?.rate ?? 0) > 0);
        if (!u || s.proxy.holding() !== 1) return false;
        if (u.progress?.numerator !== seen) {
          seen = u.progress?.numerator ?? -1;
          since = Date.now();
        }
        return Date.now() - since >= 1500;
      }, 60_000);
      const upload = held.uploads[0]!;
      assert.equal(upload.progress?.denominator, SIZE_MIB * MiB);
      assert.ok(Math.abs(Date.now() - (upload.progress?.sampledAt ?? 0)) < 30_000, 'sample time recorded');

      const list = await startCli(s.serverConfigPath, ['image-list']).result;
      assert.equal(list.code, 0, list.stderr);
      const lines = list.stdout.split('\n');
      assert.deepEqual(cells(lines[1] ?? ''),
        ['Build ID', 'Upload ID', 'Provider', 'Image', 'Provider Image Name', 'Provider Image ID', 'State', 'Age', 'Progress']);
      const row = cells(lines[3] ?? '');
      assert.deepEqual([row[0], row[1], row[2], row[6]], ['big-0000000001', upload.id, s.provider, 'uploading']);
      assert.match(row[8] ?? '', /^\d+\/512 MiB \d+% \d+(\.\d)? (KiB|MiB|GiB)\/s$/, `Progress cell: ${row[8]}`);

      const json = await startCli(s.serverConfigPath, ['image-list', '--json']).result;
      const transfer = (JSON.parse(json.stdout) as { uploads: Array<{ transfer: Record<string, number | null> }> }).uploads[0]?.transfer;
      assert.equal(transfer?.totalBytes, SIZE_MIB * MiB);
      assert.equal(transfer?.sentBytes, upload.progress?.numerator);
      assert.ok((transfer?.bytesPerSecond ?? 0) > 0, `rate ${transfer?.bytesPerSecond}`);

      // --follow (stderr not a terminal) printed the upload's progress with its rate.
      await follow.waitForOutput(new RegExp(`Upload ${upload.id} to ${s.provider}: \\d+/512 MiB [1-9]\\d*% \\d+(\\.\\d)? (KiB|MiB|GiB)/s ETA `), 'upload progress with a rate');
      s.proxy.release();
      const r = await follow.result;
      assert.equal(r.code, 0, `stdout: ${r.stdout}\nstderr: ${r.stderr}\n${await s.logTails()}`);
      assert.match(r.stdout, new RegExp(`^Build of big requested\\nBuild big-0000000001 ready \\(raw\\)\\nUpload ${upload.id} of big-0000000001 to ${s.provider} ready \\([0-9a-f-]{36}\\)\\n$`));
    } finally {
      await follow.proc.stop(2000);
    }

    // Nothing running: Nodepool's own columns only.
    const done = await startCli(s.serverConfigPath, ['image-list']).result;
    assert.deepEqual(cells(done.stdout.split('\n')[1] ?? '').at(-1), 'Age');
    assert.equal(cells(done.stdout.split('\n')[3] ?? '')[6], 'ready');
  });
});
