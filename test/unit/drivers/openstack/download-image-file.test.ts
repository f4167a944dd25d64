import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { downloadImageFile } from '../../../../lib/drivers/openstack/download-image-file.js';
import { AbortedError, CloudError } from '../../../../lib/errors.js';

/** 3 MiB of data, served by a local HTTP server in ways a Glance might answer. */
const DATA = randomBytes(3 * 1024 * 1024);
const hex = (algo: string): string => createHash(algo).update(DATA).digest('hex');

describe('downloadImageFile: a Glance image data stream into a checked file', () => {
  let server: http.Server;
  let base: string;
  let dir: string;
  const tokens: string[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-download-'));
    server = http.createServer((req, res) => {
      tokens.push(String(req.headers['x-auth-token']));
      const url = req.url ?? '';
      if (url === '/whole') {
        res.writeHead(200, { 'Content-Length': DATA.length, 'Content-Type': 'application/octet-stream' });
        res.end(DATA);
      } else if (url === '/cut') {
        // Half the data, then the connection drops.
        res.writeHead(200, { 'Content-Length': DATA.length });
        res.write(DATA.subarray(0, DATA.length / 2), () => res.socket?.destroy());
      } else if (url === '/stall') {
        res.writeHead(200, { 'Content-Length': DATA.length });
        res.write(DATA.subarray(0, 1024));
      } else {
        res.writeHead(404, { 'Content-Type': 'text/plain' });
        res.end('404 Not Found\n\nThe resource could not be found.');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  const opts = { tlsOptions: {}, idleTimeoutMs: 2000 };
  const leftovers = (): string[] => readdirSync(dir);

  it('writes the data, returns its size, md5 and sha256, and checks Glance\'s hash (sha512) and checksum', async () => {
    const dest = path.join(dir, 'ok.qcow2');
    const progress: number[] = [];
    const got = await downloadImageFile(`${base}/whole`, 'tok-1', dest, { size: DATA.length, checksum: hex('md5'), hash: { algo: 'sha512', value: hex('sha512') } }, {
      ...opts, onProgress: (done, total) => { assert.equal(total, DATA.length); progress.push(done); },
    });
    assert.deepEqual(got, { size: DATA.length, md5: hex('md5'), sha256: hex('sha256') });
    assert.ok(readFileSync(dest).equals(DATA));
    assert.equal(progress.at(-1), DATA.length);
    assert.ok(progress.every((p, i) => i === 0 || p > (progress[i - 1] ?? 0)), 'progress only grows');
    assert.equal(tokens.at(-1), 'tok-1');
    await rm(dest);
  });

  it('refuses data whose hash is not Glance\'s, and leaves no file', async () => {
    const dest = path.join(dir, 'bad-hash.qcow2');
    await assert.rejects(
      downloadImageFile(`${base}/whole`, 't', dest, { size: DATA.length, hash: { algo: 'sha512', value: 'ab'.repeat(64) } }, opts),
      (err: Error) => err instanceof CloudError && /sha512 of the data is not the image's os_hash_value/.test(err.message),
    );
    await assert.rejects(
      downloadImageFile(`${base}/whole`, 't', dest, { size: DATA.length, checksum: '0'.repeat(32) }, opts),
      (err: Error) => err instanceof CloudError && /is not the image's checksum/.test(err.message),
    );
    assert.deepEqual(leftovers(), []);
  });

  it('refuses a size that is not the image\'s', async () => {
    await assert.rejects(
      downloadImageFile(`${base}/whole`, 't', path.join(dir, 'size.qcow2'), { size: DATA.length + 1 }, opts),
      (err: Error) => err instanceof CloudError && new RegExp(`${DATA.length} bytes arrived, the image has ${DATA.length + 1}`).test(err.message),
    );
    assert.deepEqual(leftovers(), []);
  });

  it('a connection cut mid-way fails with the cloud\'s call named, and leaves no file', async () => {
    await assert.rejects(
      downloadImageFile(`${base}/cut`, 't', path.join(dir, 'cut.qcow2'), { size: DATA.length }, opts),
      (err: Error) => err instanceof CloudError && /Glance GET \/cut/.test(err.message),
    );
    assert.deepEqual(leftovers(), []);
  });

  it('a stalled connection fails after the idle timeout', async () => {
    const started = Date.now();
    await assert.rejects(
      downloadImageFile(`${base}/stall`, 't', path.join(dir, 'stall.qcow2'), { size: DATA.length }, { ...opts, idleTimeoutMs: 300 }),
      (err: Error) => err instanceof CloudError && /no data for/.test(err.message),
    );
    assert.ok(Date.now() - started < 60_000);
    assert.deepEqual(leftovers(), []);
  });

  it('an answer other than 200 fails with its status and words', async () => {
    await assert.rejects(
      downloadImageFile(`${base}/nothing`, 't', path.join(dir, 'none.qcow2'), { size: null }, opts),
      (err: Error) => err instanceof CloudError && /answered 404: 404 Not Found/.test(err.message),
    );
    assert.deepEqual(leftovers(), []);
  });

  it('an abort ends the download as an AbortedError, and leaves no file', async () => {
    const ac = new AbortController();
    const p = downloadImageFile(`${base}/stall`, 't', path.join(dir, 'abort.qcow2'), { size: DATA.length }, { ...opts, idleTimeoutMs: 60_000, signal: ac.signal });
    setTimeout(() => ac.abort(new Error('stop')), 100);
    await assert.rejects(p, (err: Error) => err instanceof AbortedError);
    assert.equal(existsSync(path.join(dir, 'abort.qcow2.part')), false);
    assert.deepEqual(leftovers(), []);
  });
});
