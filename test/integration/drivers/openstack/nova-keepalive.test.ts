/**
 * Against the real loopback Nova: a launch's status polls and a delete's polls reuse the
 * session's keep-alive connection instead of opening a TCP connection per poll.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { loadCloud } from '../../../../lib/drivers/openstack/clouds-yaml.js';
import { KeystoneSession } from '../../../../lib/drivers/openstack/keystone.js';
import { NovaClient } from '../../../../lib/drivers/openstack/nova.js';
import { sleep, waitFor } from '../../../../lib/lifecycle.js';
import { useNovaCloud, type NovaCloud } from '../../../support/openstack-full.js';

describe('Nova polls on the loopback cloud', () => {
  let cloud: NovaCloud;
  let session: KeystoneSession;
  let nova: NovaClient;
  const created: string[] = [];

  before(async () => {
    cloud = await useNovaCloud();
    session = await KeystoneSession.authenticate(await loadCloud(cloud.cloud, { path: cloud.cloudsFile }));
    nova = new NovaClient(session);
  });

  after(async () => {
    for (const id of created) await nova?.deleteServer(id).catch(() => false);
    if (created.length) {
      await waitFor(async () => (await Promise.all(created.map((id) => nova.getServer(id)))).every((s) => !s),
        { timeoutMs: 60_000, what: 'test servers deleted', intervalMs: 250 });
    }
    session?.close();
  });

  it('polls a server to ACTIVE and to gone over the connection already open', async (t) => {
    const flavor = cloud.flavors.find((f) => f.name === 'm1.tiny');
    assert.ok(flavor);
    const id = await nova.createServer({
      name: `keepalive-${randomUUID().slice(0, 8)}`, imageId: cloud.image.id, flavorId: flavor.id, networkIds: [cloud.network.id], metadata: {},
    });
    created.push(id);
    const start = session.http.stats;
    let polls = 0;
    for (let status = ''; status !== 'ACTIVE'; polls++) {
      assert.ok(polls < 400, 'ACTIVE within 400 polls');
      status = (await nova.getServer(id))?.status ?? 'gone';
      assert.notEqual(status, 'ERROR');
      await sleep(100);
    }
    assert.equal(await nova.deleteServer(id), true);
    for (; await nova.getServer(id); polls++) {
      assert.ok(polls < 800, 'gone within 400 more polls');
      await sleep(100);
    }
    created.splice(created.indexOf(id), 1);
    const end = session.http.stats;
    const opened = end.connectionsOpened - start.connectionsOpened;
    t.diagnostic(`${polls} polls (+1 delete) opened ${opened} TCP connection(s); session total ${end.connectionsOpened} for ${end.requests} requests`);
    assert.ok(polls >= 5, `enough polls to tell (${polls})`);
    assert.ok(opened <= 1, `${polls} polls opened ${opened} connections`);
  });
});
