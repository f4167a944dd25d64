/**
 * Ends, on the server, a ZooKeeper session this process gave up while ZooKeeper was
 * unreachable. Giving up closes the session's client, but a CLOSE_SESSION cannot reach a
 * server that is down, so the session lives on there (a restarted ZooKeeper restores it with a
 * fresh timeout) and so do its ephemeral lock nodes: everyone else waits a session timeout
 * after ZooKeeper is back, or longer if anything reattaches to it. Here a new connection
 * attaches to the session with its id and password and closes it: the server deletes its
 * ephemeral nodes at once, and the session can never be resumed. A session that ended already
 * is answered as expired.
 */
import zookeeper from 'node-zookeeper-client';
import { sleep } from '../../lifecycle.js';
import { abandonClient, hasSocket } from './zk-library.js';

/** The session to end, and where. */
export interface SessionToEnd {
  hosts: string;
  sessionId: Buffer;
  sessionPassword: Buffer;
  sessionTimeoutMs: number;
}

/** `closed`: ended by us; `expired`: over already; `stopped`: the signal came first. */
export type EndOutcome = 'closed' | 'expired' | 'stopped';

/** Longest wait between attempts while ZooKeeper does not answer. */
const MAX_RETRY_MS = 2000;

/** Tries until the server answers, or `signal` aborts (the store closing). */
export async function endSessionOnServer(session: SessionToEnd, signal: AbortSignal): Promise<EndOutcome> {
  const attemptMs = Math.min(session.sessionTimeoutMs, 5000);
  for (let n = 0; !signal.aborted; n++) {
    const outcome = await attemptEnd(session, attemptMs, signal);
    if (outcome) return outcome;
    await sleep(Math.min(500 * 2 ** n, MAX_RETRY_MS), signal).catch(() => undefined);
  }
  return 'stopped';
}

/** One attempt; undefined when no server answered within `timeoutMs`. */
function attemptEnd(session: SessionToEnd, timeoutMs: number, signal: AbortSignal): Promise<EndOutcome | undefined> {
  return new Promise((resolve) => {
    const options = {
      sessionTimeout: session.sessionTimeoutMs, spinDelay: 200, retries: 0,
      sessionId: session.sessionId, sessionPassword: session.sessionPassword,
    };
    const client = zookeeper.createClient(session.hosts, options as Partial<zookeeper.Option>);
    let closing = false;
    const finish = (outcome: EndOutcome | undefined): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      // The library opens its socket a tick (or a spin delay) after connect(): closing before
      // that throws, and the socket opened after it would attach to the session again.
      if (!hasSocket(client)) { setTimeout(() => finish(outcome), 50); return; }
      abandonClient(client);
      resolve(outcome);
    };
    const onAbort = (): void => finish('stopped');
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    timer.unref();
    signal.addEventListener('abort', onAbort, { once: true });
    client.once('connected', () => {
      // The server answers CLOSE_SESSION once the session and its ephemeral nodes are gone, then
      // drops the connection: that disconnect is the confirmation.
      closing = true;
      client.once('disconnected', () => finish('closed'));
      client.close();
    });
    client.once('expired', () => finish('expired'));
    client.once('disconnected', () => { if (!closing) finish(undefined); });
    client.connect();
  });
}
