import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { recordFault } from '../support/fault-report.js';
import { reach } from '../support/fault-scenario.js';
import { FaultSystem } from '../support/fault-system.js';
import { runningProcesses } from '../support/processes.js';

const exec = promisify(execFile);

async function mountsUnder(dir: string): Promise<string[]> {
  return (await readFile('/proc/mounts', 'utf8')).split('\n').map((l) => l.split(' ')[1] ?? '').filter((m) => m === dir || m.startsWith(`${dir}/`));
}

describe('faults: the images-dir file system fills up during a build', () => {
  let sys: FaultSystem | undefined;
  let mounted: string | undefined;

  afterEach(async () => {
    await sys?.stopBuilder();
    if (mounted) await exec('umount', [mounted]);
    const builderDir = sys?.builder?.env.dir;
    await sys?.stop();
    if (builderDir) assert.deepEqual(await mountsUnder(builderDir), [], 'no mount left on the builder');
    sys = mounted = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  it('fails the build with a reason, leaves no partial file, and builds once space returns', async () => {
    // qcow2, so a cut output is detectable: fake-dib, like a DIB step that ignores a write
    // error, goes on and exits 0; the builder's output checks must catch it.
    sys = await FaultSystem.start({ format: 'qcow2' });
    await sys.pauseBuild();
    await sys.startBuilder({
      beforeStart: async (env) => {
        await exec('mount', ['-t', 'tmpfs', '-o', 'size=32m', 'nodepool-fault-full', env.imagesDir]);
        mounted = env.imagesDir;
      },
    });
    sys.startServer();
    const before = await reach(sys, 'mid-build');
    const imagesDir = sys.builder!.env.imagesDir;
    const filler = path.join(imagesDir, 'filler');
    // Fill the file system while victim's DIB waits, then let it write its outputs.
    await exec('dd', ['if=/dev/zero', `of=${filler}`, 'bs=64k', 'status=none']).catch(() => undefined);
    const t0 = Date.now();
    await sys.resumeBuild();
    const s = await sys.waitForState('the victim build failed', (x) => x.builds.some((b) => b.diskimage === 'victim' && b.state === 'failed'), 60_000);
    const failed = s.builds.find((b) => b.diskimage === 'victim' && b.state === 'failed')!;
    const ready = new Set(s.builds.filter((b) => b.state === 'ready').map((b) => b.id));
    const left = (await readdir(imagesDir)).filter((f) => !['builder_id.txt', '.tmp', 'filler'].includes(f) && !ready.has(f.replace(/\..*$/, '')));
    const tmpLeft = (await readdir(path.join(imagesDir, '.tmp'))).filter((f) => f !== 'image-cache');
    const failMs = Date.now() - t0;
    // Space returns.
    await rm(filler);
    const t1 = Date.now();
    let recovered = 0;
    let recoverMs: number | null = null;
    let stuck: Error | undefined;
    try {
      await sys.settled(60_000);
      recovered = 1;
      recoverMs = Date.now() - t1;
    } catch (err) {
      stuck = err as Error;
    }
    const audit = await sys.audit(before);
    recordFault({
      scenario: 'images-dir full during a build (tmpfs)', runs: 1, recovered, lost: audit.lost, leaked: audit.leaked + left.length + tmpLeft.length, recoverMs,
      notes: `failed ${failMs} ms after the outputs began with: ${(failed.reason ?? '').replace(/\s+/g, ' ').replace(/\(see [^)]*\)/, '(see the build log)').slice(0, 140)}`,
    });
    assert.ok(failed.reason && !/TypeError|Cannot read|undefined/.test(failed.reason), `the build failed with a reason: ${failed.reason}`);
    assert.deepEqual([...left, ...tmpLeft], [], 'no partial file left after the failed build');
    assert.equal(stuck, undefined, `built and uploaded once space returned: ${stuck?.message}`);
    assert.deepEqual(audit.details, []);
  });
});
