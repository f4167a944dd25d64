import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import yaml from 'js-yaml';
import { waitFor } from '../../lib/lifecycle.js';
import { recordFault } from '../support/fault-report.js';
import { arm, finish, reach, resume } from '../support/fault-scenario.js';
import { FaultSystem } from '../support/fault-system.js';
import { runningProcesses } from '../support/processes.js';

type Doc = Record<string, unknown> & { diskimages: Array<Record<string, unknown>>; providers: Array<Record<string, unknown> & { diskimages: Array<{ name: string }> }> };

/** Rewrites a YAML config in place (the daemon reading it reloads on the change). */
async function editYaml(file: string, edit: (doc: Doc) => void): Promise<void> {
  const doc = yaml.load(await readFile(file, 'utf8')) as Doc;
  edit(doc);
  await writeFile(file, yaml.dump(doc));
}

/** How many lines of `file` contain `text`. */
async function count(file: string, text: string): Promise<number> {
  return (await readFile(file, 'utf8').catch(() => '')).split('\n').filter((l) => l.includes(text)).length;
}

function withoutVictim(doc: Doc): void {
  doc.diskimages = doc.diskimages.filter((d) => d.name !== 'victim');
  for (const p of doc.providers) p.diskimages = p.diskimages.filter((d) => d.name !== 'victim');
}

function pauseVictim(doc: Doc): void {
  for (const d of doc.diskimages) if (d.name === 'victim') d.pause = true;
}

// Issue 20, defect 5: a reload that removed a diskimage or paused it unregistered
// image-build:<name> while the builder held the build; gearmand (--job-retries=1, as the docs
// require) failed it at once ("the builder running it may have died"), DIB ran to the end and
// its files were deleted as strays. Both daemons are real processes reloading edited files.
describe('faults: a diskimage removed or paused while it builds', () => {
  let sys: FaultSystem | undefined;

  afterEach(async () => {
    await sys?.stop();
    sys = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  /** Base ready and uploaded, victim paused in DIB; returns what must not be lost and victim's build id. */
  async function midBuild(s: FaultSystem): Promise<{ before: Awaited<ReturnType<typeof reach>>; victimId: string; builderLog: string; serverLog: string }> {
    await arm(s, 'mid-build');
    const b = await s.startBuilder();
    s.startServer();
    const before = await reach(s, 'mid-build');
    const victim = (await s.store.listBuilds()).find((x) => x.diskimage === 'victim' && x.state === 'building');
    assert.ok(victim, 'a victim build is running');
    return { before, victimId: victim.id, builderLog: path.join(b.env.dir, 'builder.log'), serverLog: path.join(s.dir, 'server.log') };
  }

  /** Applies `edit` to both daemons' config files and waits until both have reloaded. */
  async function reloadBoth(s: FaultSystem, m: { builderLog: string; serverLog: string }, edit: (doc: Doc) => void, serverEdit: (doc: Doc) => void = edit): Promise<void> {
    const [b0, s0] = [await count(m.builderLog, 'configuration reloaded'), await count(m.serverLog, 'config reloaded')];
    await editYaml(s.builder!.env.configPath, edit);
    await editYaml(s.serverConfigPath, serverEdit);
    await waitFor(async () => (await count(m.builderLog, 'configuration reloaded')) > b0, { timeoutMs: 15_000, what: 'the builder reloaded its config' });
    await waitFor(async () => (await count(m.serverLog, 'config reloaded')) > s0, { timeoutMs: 15_000, what: 'the server reloaded its config' });
  }

  it('a diskimage paused mid-build: the running build completes, is kept and uploaded; no new build', async () => {
    sys = await FaultSystem.start({ gearmand: { jobRetries: 1 } });
    const m = await midBuild(sys);
    const t0 = Date.now();
    await reloadBoth(sys, m, pauseVictim);
    await resume(sys);
    await finish(sys, 'diskimage paused mid-build', t0, m.before);
    const victims = (await sys.store.listBuilds()).filter((b) => b.diskimage === 'victim');
    assert.deepEqual(victims.map((b) => [b.id, b.state]), [[m.victimId, 'ready']], 'the build running at the pause is the ready one, and nothing else was built');
  });

  it('a diskimage removed mid-build: the running build completes (ready), then is deleted for leaving the config, after the grace', async () => {
    sys = await FaultSystem.start({ gearmand: { jobRetries: 1 } });
    const s = sys;
    const m = await midBuild(s);
    const t0 = Date.now();
    await reloadBoth(s, m, withoutVictim, (doc) => {
      withoutVictim(doc);
      (doc['image-lifecycle'] as Record<string, unknown>)['config-removal-grace'] = 2;
    });
    await resume(s);
    let recovered = 0;
    let recoverMs: number | null = null;
    let ended: string | undefined;
    let stuck: Error | undefined;
    try {
      // The build's end as the server recorded it (before its deletion).
      ended = await waitFor(async () => {
        const v = (await s.store.listBuilds()).find((b) => b.id === m.victimId);
        return v && v.state !== 'building' ? `${v.state}${v.reason ? `: ${v.reason}` : ''}` : undefined;
      }, { timeoutMs: 60_000, what: `victim build ${m.victimId} to end`, intervalMs: 50 });
      // Then the server deletes it for leaving the config (honest, after the grace): no victim record or file left.
      await s.waitForState('victim deleted, base ready and uploaded', (st) =>
        !st.builds.some((b) => b.diskimage === 'victim') && !st.uploads.some((u) => u.diskimage === 'victim')
        && st.builds.some((b) => b.diskimage === 'base' && b.state === 'ready'), 60_000);
      await waitFor(async () => !(await readdir(s.builder!.env.imagesDir)).some((f) => f.startsWith(`${m.victimId}.`)), { timeoutMs: 20_000, what: 'victim files deleted' });
      if (ended === 'ready') recovered = 1;
      recoverMs = Date.now() - t0;
    } catch (err) {
      stuck = err as Error;
    }
    const audit = await s.audit(m.before);
    const deletedFor = (await count(m.serverLog, 'diskimage no longer configured')) > 0;
    recordFault({
      scenario: 'diskimage removed mid-build', runs: 1, recovered, lost: audit.lost + (ended === 'ready' ? 0 : 1), leaked: audit.leaked, recoverMs,
      notes: `the running build ended ${ended ?? 'never'}, then was deleted by the server for leaving the config after config-removal-grace (2 s here)`,
    });
    if (stuck) assert.fail(`not recovered: ${stuck.message}\n${await s.logTails()}`);
    assert.equal(ended, 'ready', `the build running at the removal ended ${ended}`);
    assert.ok(deletedFor, 'the server says why it deleted the build');
    assert.deepEqual(audit.details, [], 'nothing lost or leaked');
  });
});
