import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { completionTarget, configFromWords } from '../../../cli/commands/completion.js';

describe('completionTarget', () => {
  const kind = (...words: string[]) => completionTarget(words)?.kind;

  it('leaves commands and options to yargs', () => {
    assert.equal(kind(''), undefined);
    assert.equal(kind('image-b'), undefined);
    assert.equal(kind('image-build', '--fo'), undefined);
    assert.equal(kind('list', ''), undefined);
  });

  it('names the kind of a positional by command and position', () => {
    assert.equal(kind('image-build', ''), 'diskimage');
    assert.equal(kind('image-pause', 'deb'), 'diskimage');
    assert.equal(kind('image-delete', ''), 'build');
    assert.equal(kind('dib-image-delete', 'ubu'), 'build');
    assert.equal(kind('info', ''), 'provider');
    assert.equal(kind('hold', ''), 'node');
    assert.equal(kind('image-build', 'debian', ''), undefined, 'one diskimage only');
    assert.equal(kind('image-pin', 'ubu'), 'diskimage');
    assert.equal(kind('image-pin', 'ubuntu-jammy', ''), 'build');
    assert.equal(kind('image-revoke', '--nodes', 'delete-ready', 'ubu'), 'build', '--nodes takes a value');
    assert.equal(kind('image-promote', 'ubuntu-jammy-0000000001', ''), undefined);
  });

  it('repeats the variadic labels of request', () => {
    assert.equal(kind('request', ''), 'label');
    assert.equal(kind('request', 'small', 'large', ''), 'label');
  });

  it('skips options and their values when counting positionals', () => {
    assert.equal(kind('-c', '/etc/np.yaml', 'image-build', ''), 'diskimage');
    assert.equal(kind('image-build', '--timeout', '60', ''), 'diskimage');
    assert.equal(kind('image-build', '--follow', ''), 'diskimage');
    assert.equal(kind('--config=/x.yaml', 'erase', '--force', ''), 'provider');
  });

  it('names the value of --provider, --image and --build-id, in every spelling', () => {
    assert.deepEqual(completionTarget(['image-pause', 'deb', '--provider', 'cl']), { kind: 'provider', partial: 'cl', prefix: '' });
    assert.deepEqual(completionTarget(['image-delete', '--image=ub']), { kind: 'diskimage', partial: 'ub', prefix: '--image=' });
    // bash splits at '=' and completes the part after it.
    assert.deepEqual(completionTarget(['image-delete', '--build-id', '=', 'ub']), { kind: 'build', partial: 'ub', prefix: '' });
    assert.equal(kind('image-pause', 'deb', '--reason', ''), undefined);
    assert.equal(kind('-c', ''), 'file', 'a config path is left to the shell');
    assert.equal(kind('--config', '=', 'x'), 'file');
    assert.equal(kind('export-image-data', ''), 'file');
  });
});

describe('configFromWords', () => {
  it('takes the last -c/--config before the word being completed, else the fallback', () => {
    assert.equal(configFromWords(['list', ''], '/etc/nodepool/nodepool.yaml'), '/etc/nodepool/nodepool.yaml');
    assert.equal(configFromWords(['-c', 'a.yaml', 'list', '--config', 'b.yaml', ''], 'x'), 'b.yaml');
    assert.equal(configFromWords(['--config=a.yaml', 'info', ''], 'x'), 'a.yaml');
    assert.equal(configFromWords(['--config', '=', 'a.yaml', 'info', ''], 'x'), 'a.yaml');
    assert.equal(configFromWords(['-c', 'a.y'], 'x'), 'x', 'the word being completed is not a config yet');
  });
});
