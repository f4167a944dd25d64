import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fn } from '../../../../lib/gearman/functions.js';
import { builderHosts } from '../../../../server/components/builder-hosts.js';

void describe('builderHosts', () => {
  it('names each builder host that offers an image function once, sorted', () => {
    const registered = new Map<string, string[]>([
      [fn.imageBuild('debian'), ['nb02.example.org:b-2', 'nb01:b-1']],
      [fn.imageUpload('debian-0000000001'), ['nb01:b-1']],
      [fn.imageDelete('debian-0000000001'), ['nb03:b-3']],
    ]);
    assert.deepEqual(builderHosts(registered), ['nb01', 'nb02.example.org', 'nb03']);
  });

  it('leaves out workers of other functions and client ids that are not a builder\'s', () => {
    const registered = new Map<string, string[]>([
      ['some-other-function', ['elsewhere:w-1']],
      [fn.imageBuild('debian'), ['-', 'no-colon']],
    ]);
    assert.deepEqual(builderHosts(registered), []);
  });
});
