import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import yaml from 'js-yaml';
import { adminWorkers } from '../../../lib/gearman/admin.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { fakeDiskimage, loopbackProvider } from '../../support/builder-env.js';
import { startGearmand } from '../../support/gearmand.js';
import { ImageSystem } from '../../support/image-system.js';
import { runningProcesses } from '../../support/processes.js';

/** Points a config file's gearman-servers at `port`. */
async function moveGearman(file: string, port: number): Promise<void> {
  const doc = yaml.load(await readFile(file, 'utf8')) as Record<string, unknown>;
  doc['gearman-servers'] = [{ host: '127.0.0.1', port }];
  await writeFile(file, yaml.dump(doc));
}

const logged = async (file: string, text: string): Promise<boolean> => (await readFile(file, 'utf8')).includes(text);

describe('a gearman-servers change on reload', () => {
  let sys: ImageSystem | undefined;
  after(async () => {
    await sys?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('is held back by server and builder with a log line that a restart is needed; both keep working on the running gearmand', async () => {
    sys = await ImageSystem.start({ diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '0.1' })], providers: [loopbackProvider('cloud-a', ['deb'])] });
    const other = await startGearmand();
    try {
      const builder = await sys.addBuilder('a', { process: true });
      sys.startServerProcess();
      await sys.waitForBuild('first build ready', (b) => b.state === 'ready');

      await moveGearman(sys.serverConfigPath, other.port);
      await moveGearman(builder.env.configPath, other.port);
      const line = 'gearman-servers changed in the config: restart this daemon to use them';
      await waitFor(() => logged(path.join(sys!.dir, 'server.log'), line), { timeoutMs: 20_000, what: 'the server to log the held-back change' });
      await waitFor(() => logged(path.join(builder.env.dir, 'builder.log'), line), { timeoutMs: 20_000, what: 'the builder to log the held-back change' });

      await sys.store.requestBuild('deb');
      await sys.waitForBuild('the requested build ready, through the running gearmand', (b) => b.id === 'deb-0000000002' && b.state === 'ready', 60_000);
      assert.deepEqual((await adminWorkers(other.address)).flatMap((w) => w.functions), [], 'nobody moved to the new gearmand');
    } finally {
      await other.stop();
    }
  });
});
