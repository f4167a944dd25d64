/**
 * The shape every image fault scenario of test/faults/ shares: bring a {@link FaultSystem} to
 * "base ready and uploaded, victim mid-build (or mid-upload)", inject the fault, let the system
 * recover, then audit and record the figures (test/support/fault-report.ts) before asserting.
 */
import assert from 'node:assert/strict';
import { recordFault } from './fault-report.js';
import type { FaultSystem } from './fault-system.js';

/** Where the fault hits. */
export type FaultMoment = 'mid-build' | 'mid-upload';

/** Ready ids before the fault: what must not be lost. */
export type ReadyIds = { builds: string[]; uploads: string[] };

/**
 * Arms the moment before anything runs: a pause file for victim's DIB, or the proxy holding
 * victim's upload after its first 256 KiB. Call before the builder and server start.
 */
export async function arm(sys: FaultSystem, moment: FaultMoment): Promise<void> {
  if (moment === 'mid-build') return sys.pauseBuild();
  sys.proxy.match = (name) => name?.startsWith('victim-') ?? false;
  sys.proxy.fault = { kind: 'hold', afterBytes: 256 * 1024 };
}

/** Waits until base is ready and uploaded and victim sits at the armed moment; returns the ready ids. */
export async function reach(sys: FaultSystem, moment: FaultMoment, timeoutMs = 90_000): Promise<ReadyIds> {
  try {
    await waitMoment(sys, moment, timeoutMs);
  } catch (err) {
    const s = { builds: await sys.store.listBuilds(), uploads: await sys.store.listUploads() };
    throw new Error(`${(err as Error).message}; records: ${JSON.stringify(s)}\n${await sys.logTails()}`, { cause: err });
  }
  return sys.readyIds();
}

async function waitMoment(sys: FaultSystem, moment: FaultMoment, timeoutMs: number): Promise<void> {
  await sys.waitForState('base built and uploaded', (s) => s.uploads.some((u) => u.diskimage === 'base' && u.state === 'ready'), timeoutMs);
  if (moment === 'mid-build') await sys.waitBuildPaused(timeoutMs);
  else {
    await sys.waitForState('victim upload held by the proxy', (s) =>
      sys.proxy.holding() > 0 && s.uploads.some((u) => u.diskimage === 'victim' && u.state === 'uploading'), timeoutMs);
  }
}

/** Lets the victim go on (the pause file removed, held uploads released). */
export async function resume(sys: FaultSystem): Promise<void> {
  await sys.resumeBuild();
  sys.proxy.release();
}

/**
 * Waits (bounded) for the system to settle after a fault injected at `faultAt`, audits it,
 * records the figures of one run, then asserts: recovered, nothing lost, nothing leaked.
 */
export async function finish(sys: FaultSystem, scenario: string, faultAt: number, before: ReadyIds, timeoutMs = 90_000): Promise<void> {
  let recovered = 0;
  let recoverMs: number | null = null;
  let stuck: Error | undefined;
  try {
    await sys.settled(timeoutMs);
    recovered = 1;
    recoverMs = Date.now() - faultAt;
  } catch (err) {
    stuck = err as Error;
  }
  const audit = await sys.audit(before);
  recordFault({ scenario, runs: 1, recovered, lost: audit.lost, leaked: audit.leaked, recoverMs });
  if (stuck) {
    const s = { builds: await sys.store.listBuilds(), uploads: await sys.store.listUploads() };
    assert.fail(`${scenario}: not recovered: ${stuck.message}; records: ${JSON.stringify(s)}; ${audit.details.join('; ')}\n${await sys.logTails()}`);
  }
  assert.deepEqual(audit.details, [], `${scenario}: nothing lost or leaked`);
}
