import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { qemuArgs, readableConsole } from '../../../../lib/drivers/qemu/vm-host.js';

describe('qemu VM console', () => {
  it('asks SeaBIOS for a serial console, so a disk that does not boot says so in console.log', () => {
    const args = qemuArgs('/state/vm-1', { id: 'vm-1', accel: 'tcg', memory: 512, cpus: 1, port: 40022 });
    const at = args.indexOf('-fw_cfg');
    assert.equal(args[at + 1], 'name=etc/sercon-port,file=/state/vm-1/sercon-port');
    assert.equal(args[args.indexOf('-serial') + 1], 'file:/state/vm-1/console.log');
  });

  it('reads as text: no terminal escapes, backspaced countdowns, carriage returns or other control bytes', () => {
    const raw = '\x1bc\x1b[?7l\x1b[2J\x1b[0mSeaBIOS (version 1.16.2)\r\nPress Ctrl-B...\b \b\b \bnet0: up\r\nBoot failed: not a bootable disk\r\n\x07No bootable device.\r\n';
    assert.equal(readableConsole(raw), 'SeaBIOS (version 1.16.2)\nPress Ctrl-B...net0: up\nBoot failed: not a bootable disk\nNo bootable device.\n');
  });

  it('keeps tabs, newlines and UTF-8 text', () => {
    assert.equal(readableConsole('a\tb\nGRUB – ok\n'), 'a\tb\nGRUB – ok\n');
  });
});
