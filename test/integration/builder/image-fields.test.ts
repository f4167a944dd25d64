import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fakeDiskimage, loopbackProvider } from '../../support/builder-env.js';
import { ImageSystem } from '../../support/image-system.js';
import { runningProcesses } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

// Nodepool 11 records a diskimage's username, python-path and shell-type on each build, and
// copies the build's into each upload (ImageBuild/ImageUpload username, python_path, shell_type).
describe('diskimage username, python-path and shell-type on builds and uploads (ZooKeeper store)', () => {
  let zk: ZooKeeperHandle;
  let sys: ImageSystem;

  before(async () => {
    zk = await startZooKeeper();
    sys = await ImageSystem.start({
      zookeeper: { port: zk.port },
      diskimages: [
        fakeDiskimage('set', { formats: ['qcow2'], username: 'ubuntu', 'python-path': '/usr/bin/python3', 'shell-type': 'bash' }),
        fakeDiskimage('plain', { formats: ['qcow2'] }),
      ],
      providers: [loopbackProvider('one', ['set', 'plain'])],
    });
    await sys.addBuilder('a');
    await sys.startServer();
  });

  after(async () => {
    await sys?.stop();
    await zk?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('records the configured values on the build and its upload, and Nodepool\'s defaults where the diskimage sets none', async () => {
    const s = await sys.waitForState('both uploads ready', (x) => ['set', 'plain'].every((d) =>
      x.uploads.some((u) => u.diskimage === d && u.state === 'ready')), 90_000);
    const fields = (r: { username?: string | null; pythonPath?: string | null; shellType?: string | null } | undefined) =>
      ({ username: r?.username, pythonPath: r?.pythonPath, shellType: r?.shellType });
    const set = { username: 'ubuntu', pythonPath: '/usr/bin/python3', shellType: 'bash' };
    const plain = { username: 'zuul', pythonPath: 'auto', shellType: null };
    assert.deepEqual(fields(s.builds.find((b) => b.diskimage === 'set')), set);
    assert.deepEqual(fields(s.uploads.find((u) => u.diskimage === 'set')), set);
    assert.deepEqual(fields(s.builds.find((b) => b.diskimage === 'plain')), plain);
    assert.deepEqual(fields(s.uploads.find((u) => u.diskimage === 'plain')), plain);
  });
});
