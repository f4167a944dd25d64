/**
 * The addWatch request as it goes on the wire (ZooKeeper 3.6's AddWatchRequest after the
 * request header), and which paths a recursive watch covers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addWatchRequest, covers, MODE_PERSISTENT_RECURSIVE, OP_ADD_WATCH } from '../../../lib/store/zookeeper/persistent-watch.js';

void describe('addWatchRequest', () => {
  void it('frames header (xid, opcode 106) and body (path, mode) as ZooKeeper reads them', () => {
    const req = addWatchRequest('/np/nodes') as { header: { xid: number }; toBuffer: () => Buffer };
    req.header.xid = 7;
    const buf = req.toBuffer();
    const path = Buffer.from('/np/nodes');
    assert.equal(buf.readInt32BE(0), buf.length - 4, 'length prefix');
    assert.equal(buf.readInt32BE(4), 7, 'xid set by the connection');
    assert.equal(buf.readInt32BE(8), OP_ADD_WATCH);
    assert.equal(buf.readInt32BE(12), path.length);
    assert.deepEqual(buf.subarray(16, 16 + path.length), path);
    assert.equal(buf.readInt32BE(16 + path.length), MODE_PERSISTENT_RECURSIVE);
    assert.equal(buf.length, 16 + path.length + 4);
  });

  void it('declares a type whose reply has no body, so the library reads the reply without knowing opcode 106', () => {
    const req = addWatchRequest('/x') as { header: { type: number } };
    assert.equal(req.header.type, 2);
  });

  void it('counts multi-byte paths in bytes', () => {
    const buf = (addWatchRequest('/é') as { toBuffer: () => Buffer }).toBuffer();
    assert.equal(buf.readInt32BE(12), 3);
  });
});

void describe('covers', () => {
  void it('is the root and what is below it, not a sibling sharing a prefix', () => {
    assert.equal(covers('/a/nodes', '/a/nodes'), true);
    assert.equal(covers('/a/nodes', '/a/nodes/0000000001/lock/x'), true);
    assert.equal(covers('/a/nodes', '/a/nodes-lock/1'), false);
    assert.equal(covers('/a/nodes', '/a'), false);
  });
});
