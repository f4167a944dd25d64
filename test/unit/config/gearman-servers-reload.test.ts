import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { keepRunningGearmanServers } from '../../../lib/config/gearman-servers.js';
import { parseConfig } from '../../../lib/config/load.js';

const config = (servers: object[], extra = ''): ReturnType<typeof parseConfig> =>
  parseConfig(`gearman-servers: ${JSON.stringify(servers)}\nlabels: [{name: small}]\n${extra}`, 'nodepool.yaml');

describe('keepRunningGearmanServers', () => {
  const running = config([{ host: '127.0.0.1', port: 4730 }]);

  it('applies a reload that leaves gearman-servers alone as it is', () => {
    const next = config([{ host: '127.0.0.1', port: 4730 }], 'state-dir: /tmp/other\n');
    assert.deepEqual(keepRunningGearmanServers(running, next), { config: next, heldBack: false });
  });

  it('keeps the running servers and the rest of the new config when the list changed', () => {
    const next = config([{ host: '127.0.0.1', port: 4731 }], 'state-dir: /tmp/other\n');
    const r = keepRunningGearmanServers(running, next);
    assert.equal(r.heldBack, true);
    assert.deepEqual(r.config.gearmanServers, running.gearmanServers);
    assert.equal(r.config.stateDir, '/tmp/other');
    assert.ok(Object.isFrozen(r.config));
  });

  it('holds back an emptied list too: the image lifecycle runs on its connections until a restart', () => {
    const r = keepRunningGearmanServers(running, config([], 'state-dir: /tmp/other\n'));
    assert.equal(r.heldBack, true);
    assert.deepEqual(r.config.gearmanServers, running.gearmanServers);
    assert.equal(r.config.stateDir, '/tmp/other');
  });

  it('holds back a first list: a launcher-only server starts its image lifecycle at the next start', () => {
    const r = keepRunningGearmanServers(config([]), running);
    assert.equal(r.heldBack, true);
    assert.deepEqual(r.config.gearmanServers, []);
  });
});
