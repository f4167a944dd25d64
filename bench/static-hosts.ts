/**
 * The static benches' hosts: one real sshd listening on `hosts` loopback addresses
 * (127.0.0.2…) on one free-ish port, each address a static host. Runs `body` with them and
 * stops the sshd and every process the bench started, even when `body` throws.
 */
import { startSshd, type SshdHandle } from '../test/support/sshd.js';
import { stopAllProcesses } from '../test/support/processes.js';

export async function onStaticHosts(hosts: number, body: (sshd: SshdHandle, addresses: string[], port: number) => Promise<void>): Promise<void> {
  const addresses = Array.from({ length: hosts }, (_, i) => `127.0.${Math.floor((i + 2) / 256)}.${(i + 2) % 256}`);
  const port = 20000 + Math.floor(Math.random() * 20000);
  const sshd = await startSshd({ addresses: addresses.map((a) => `${a}:${port}`), keyTypes: ['ed25519'], reexec: false });
  try {
    await body(sshd, addresses, port);
  } finally {
    await sshd.stop();
    await stopAllProcesses();
  }
}
