#!/usr/bin/env node
/**
 * nodepool: the operator CLI. Each command lives in cli/commands/ and returns its output and
 * exit code; printing and exiting happen only here.
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { configValidate, type CommandResult } from '../cli/commands/config-validate.js';

function finish(r: CommandResult): void {
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  process.exitCode = r.exitCode;
}

await yargs(hideBin(process.argv))
  .scriptName('nodepool')
  .option('config', { alias: 'c', type: 'string', default: process.env.NODEPOOL_CONFIG ?? '/etc/nodepool/nodepool.yaml', describe: 'nodepool.yaml (env NODEPOOL_CONFIG)' })
  .command('config-validate', 'validate the configuration file', {}, (a) => finish(configValidate(String(a.config))))
  .demandCommand(1, 'name a command (see --help)')
  .strict()
  .fail((msg, err) => {
    process.stderr.write(`${msg ?? err?.message ?? 'error'}\n`);
    process.exit(2);
  })
  .parseAsync();
