import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { packageVersion, readBuildInfo, versionText } from '../../lib/build-info.js';

describe('build info', () => {
  it('prints the version with the short git revision it was built from', () => {
    const sha = '0123456789abcdef0123456789abcdef01234567';
    assert.equal(versionText({ version: '1.2.3', revision: sha, built: '' }), '1.2.3 (git 0123456789ab)');
    assert.equal(versionText({ version: '1.2.3', revision: `${sha}-dirty`, built: '' }), '1.2.3 (git 0123456789ab-dirty)');
    assert.equal(versionText({ version: '1.2.3', revision: null, built: '' }), '1.2.3');
  });

  it('says so when running from the sources, with the version of package.json', () => {
    const { version } = JSON.parse(readFileSync(path.resolve('package.json'), 'utf8')) as { version: string };
    assert.equal(versionText(undefined), `${version} (from source)`);
    assert.equal(packageVersion(path.resolve('lib')), version);
  });

  it('reads build-info.json from the directory above the compiled lib/', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'nodepool-build-info-'));
    try {
      assert.equal(readBuildInfo(dir), undefined);
      writeFileSync(path.join(dir, 'build-info.json'), JSON.stringify({ version: '9.9.9', revision: null, built: '2026-01-01T00:00:00Z' }));
      assert.deepEqual(readBuildInfo(dir), { version: '9.9.9', revision: null, built: '2026-01-01T00:00:00Z' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

