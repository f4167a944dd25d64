/**
 * The network-namespace support the many-hosts test stands on (test/support/netns.ts): hosts
 * reach each other and the root namespace over the bridge, a process started inside is
 * tracked by its real pid, killAll kills what runs inside, and teardown leaves no namespace,
 * link or process behind.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import { waitFor } from '../../../lib/lifecycle.js';
import { NetnsNetwork } from '../../support/netns.js';
import { runningProcesses, stopAllProcesses } from '../../support/processes.js';

const ECHO_SERVER = (address: string, port: number): string =>
  `require('net').createServer((c) => c.end('hello from ' + c.localAddress)).listen(${port}, '${address}', () => console.log('listening'))`;

function ask(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port });
    let out = '';
    s.setTimeout(5000, () => s.destroy(new Error('no answer in 5 s')));
    s.on('data', (d: Buffer) => { out += d.toString(); });
    s.on('error', reject);
    s.on('close', () => resolve(out));
  });
}

void describe('network namespaces for many-host tests', () => {
  after(async () => {
    await stopAllProcesses();
  });

  it('connects hosts over the bridge, tracks processes by their own pid, and tears everything down', async () => {
    const network = await NetnsNetwork.create();
    try {
      assert.match(network.subnet, /^198\.18\.\d+$/);
      const a = await network.addHost('a');
      const b = await network.addHost('b', { addresses: 2 });
      assert.equal(b.addresses.length, 2);
      assert.equal(new Set([network.rootAddress, a.address, ...b.addresses]).size, 4, 'every address distinct');

      const server = b.start('echo', process.execPath, ['-e', ECHO_SERVER(b.addresses[1] as string, 7000)], { stdio: ['ignore', 'pipe', 'ignore'] });
      await new Promise<void>((resolve, reject) => {
        server.child.stdout?.once('data', () => resolve());
        server.child.once('exit', () => reject(new Error('echo server exited')));
      });
      assert.deepEqual(await b.pids(), [server.pid], 'the tracked pid is the process inside, not a wrapper');
      assert.deepEqual(await a.pids(), []);

      assert.equal(await ask(b.addresses[1] as string, 7000), `hello from ${b.addresses[1]}`, 'reached from the root namespace');
      const fromA = await a.exec(process.execPath, ['-e',
        `const s=require('net').connect(7000,'${b.addresses[1]}');s.on('data',(d)=>process.stdout.write(d))`]);
      assert.equal(fromA.stdout, `hello from ${b.addresses[1]}`, 'reached from another host');
      const loopback = await a.exec(process.execPath, ['-e',
        `const s=require('net').connect(7000,'127.0.0.1');s.on('error',(e)=>process.stdout.write(e.code))`]);
      assert.equal(loopback.stdout, 'ECONNREFUSED', "a host's loopback is its own");

      assert.deepEqual(await b.killAll(), [server.pid]);
      assert.equal((await server.exited).signal, 'SIGKILL');
      assert.deepEqual(await b.pids(), []);
      b.start('sleeper', '/bin/sleep', ['600']);
    } finally {
      await network.teardown();
    }
    assert.deepEqual(await network.leftovers(), [], 'no namespace, veth or bridge left');
    await waitFor(() => runningProcesses().length === 0, { timeoutMs: 5000, what: 'teardown to kill the process left inside' });
  });
});
