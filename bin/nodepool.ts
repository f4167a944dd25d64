#!/usr/bin/env node
/**
 * nodepool: the operator CLI. Each command lives in cli/commands/ and returns its output and
 * exit code; parsing argv, printing, signals and exiting happen only here.
 */
import { createInterface } from 'node:readline/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import type Yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { completeWords } from '../cli/commands/completion.js';
import { EXIT, EXIT_CODES_HELP, type CommandResult, type LiveOutput } from '../cli/commands/shared.js';
import { versionText } from '../lib/build-info.js';
import type { LoadOptions } from '../lib/config/load.js';
import type { Config } from '../lib/config/schema.js';
import { int, numberArgument, seconds } from '../lib/config/schema-kit.js';
import { createRootLogger, type Logger } from '../lib/log.js';
import { ROLES } from '../lib/web-auth/auth-types.js';

/**
 * A command's function, loaded when the command runs: `--help` and each command load only the
 * modules they use (start-up of the installed CLI, bench/cli-startup.ts).
 */
function lazy<M, K extends keyof M>(load: () => Promise<M>, name: K): M[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never {
  return (async (...args: unknown[]) => ((await load())[name] as (...a: unknown[]) => unknown)(...args)) as never;
}

// The commands (cli/commands/), each loaded when it runs.
const configValidate = lazy(() => import('../cli/commands/config-validate.js'), 'configValidate');
const createAuthToken = lazy(() => import('../cli/commands/create-auth-token.js'), 'createAuthToken');
const dibImageDelete = lazy(() => import('../cli/commands/dib-image-delete.js'), 'dibImageDelete');
const dibImageList = lazy(() => import('../cli/commands/dib-image-list.js'), 'dibImageList');
const imageBuild = lazy(() => import('../cli/commands/image-build.js'), 'imageBuild');
const imageDelete = lazy(() => import('../cli/commands/image-delete.js'), 'imageDelete');
const imageList = lazy(() => import('../cli/commands/image-list.js'), 'imageList');
const imagePause = lazy(() => import('../cli/commands/image-pause.js'), 'imagePause');
const imageStatus = lazy(() => import('../cli/commands/image-status.js'), 'imageStatus');
const imageUnpause = lazy(() => import('../cli/commands/image-unpause.js'), 'imageUnpause');
const imagePin = lazy(() => import('../cli/commands/image-pin.js'), 'imagePin');
const imageUnpin = lazy(() => import('../cli/commands/image-unpin.js'), 'imageUnpin');
const imageRevoke = lazy(() => import('../cli/commands/image-revoke.js'), 'imageRevoke');
const imageUnrevoke = lazy(() => import('../cli/commands/image-unrevoke.js'), 'imageUnrevoke');
const imagePromote = lazy(() => import('../cli/commands/image-promote.js'), 'imagePromote');
const alienImageList = lazy(() => import('../cli/commands/alien-image-list.js'), 'alienImageList');
const deleteNode = lazy(() => import('../cli/commands/delete.js'), 'deleteNode');
const erase = lazy(() => import('../cli/commands/erase.js'), 'erase');
const exportImageData = lazy(() => import('../cli/commands/export-image-data.js'), 'exportImageData');
const importImageData = lazy(() => import('../cli/commands/import-image-data.js'), 'importImageData');
const hold = lazy(() => import('../cli/commands/hold.js'), 'hold');
const info = lazy(() => import('../cli/commands/info.js'), 'info');
const labelList = lazy(() => import('../cli/commands/label-list.js'), 'labelList');
const list = lazy(() => import('../cli/commands/list.js'), 'list');
const release = lazy(() => import('../cli/commands/release.js'), 'release');
const request = lazy(() => import('../cli/commands/request.js'), 'request');
const requestList = lazy(() => import('../cli/commands/request-list.js'), 'requestList');

// yargs' CommonJS build: its help wraps at word boundaries, while the ES module build cuts
// words at the column width (cliui's ESM wrap is a plain character count).
const yargs = createRequire(import.meta.url)('yargs') as typeof Yargs;

const NO_COMMAND = 'Name a command (see the list above)';

function finish(r: CommandResult): void {
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  process.exitCode = r.exitCode;
}

const live: LiveOutput = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  errIsTTY: process.stderr.isTTY === true,
};

/** Ctrl-C while following a build stops following (the build goes on); a second one exits at once. */
function interruptSignal(): AbortSignal {
  const ac = new AbortController();
  const onSignal = (): void => {
    if (ac.signal.aborted) process.exit(EXIT.interrupted);
    ac.abort(new Error('interrupted'));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return ac.signal;
}

/** Messages of providers and cloud clients the CLI creates (delete --now, alien-image-list). */
const cliLog = () => createRootLogger({ level: process.env.NODEPOOL_LOG_LEVEL ?? 'warn', format: 'pretty' });
/**
 * This host's cloud image services (cli/commands/provider-access.ts `ImageServicesFor`);
 * bin/daemon.ts (with the drivers and cloud clients) is loaded only by the commands that use
 * them, and its types are not named here, so `--help` loads no driver code.
 */
const loadImageServices = async () => {
  const { processImageServices } = await import('./daemon.js');
  return (config: Config, log: Logger) => processImageServices(() => config, log);
};

/** Asks on the terminal; undefined when stdin is not one (erase then refuses). */
const confirm = process.stdin.isTTY === true ? async (question: string): Promise<boolean> => {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
} : undefined;

const JSON_OPTION = { type: 'boolean', default: false, describe: 'print JSON instead of a table' } as const;
const str = (v: unknown): string | undefined => (v === undefined ? undefined : String(v));
/**
 * A number flag: no yargs `type: 'number'` (it turns "abc" into NaN); the coerce says what was
 * given and what is expected, and the run ends as a usage error (exit 2).
 */
const numberFlag = (flag: string, schema: Parameters<typeof numberArgument>[1], describe: string) =>
  ({ requiresArg: true, coerce: numberArgument(flag, schema), describe }) as const;
const SECONDS = seconds({ min: 1, fractions: true });

const DEFAULT_CONFIG = process.env.NODEPOOL_CONFIG ?? '/etc/nodepool/nodepool.yaml';

/** How every command reads the config: the secure file and this process's environment for `%(NODEPOOL_…)`. */
const loadOptions = (a: { secure?: string | undefined }): LoadOptions => ({
  env: process.env, host: { homeDir: os.homedir(), cwd: process.cwd() }, ...(a.secure !== undefined ? { secureFile: a.secure } : {}),
});

// Shell completion (the script of `nodepool completion` runs `nodepool --get-yargs-completions
// <words>`): names of diskimages, providers, labels, builds and nodes are answered here, before
// yargs, which completes commands and options (its completion callback cannot wait for a store).
const completing = process.argv.indexOf('--get-yargs-completions');
if (completing !== -1) {
  const values = await completeWords(process.argv.slice(completing + 2), DEFAULT_CONFIG);
  if (values) {
    process.stdout.write(values.map((v) => `${v}\n`).join(''));
    process.exit(0);
  }
}

await yargs(hideBin(process.argv))
  .scriptName('nodepool')
  .usage('$0 <command> [options]')
  .version(versionText())
  .option('config', {
    alias: 'c', type: 'string', global: true,
    default: DEFAULT_CONFIG,
    describe: 'nodepool.yaml (env NODEPOOL_CONFIG)',
  })
  .option('secure', {
    alias: 's', type: 'string', global: true, requiresArg: true,
    describe: "Nodepool's secure file: zookeeper-servers, zookeeper-tls, diskimages' env-vars (env NODEPOOL_SECURE)",
    ...(process.env.NODEPOOL_SECURE ? { default: process.env.NODEPOOL_SECURE } : {}),
  })
  .command('dib-image-list', 'list diskimage builds and what needs attention', (y) => y.option('json', JSON_OPTION),
    async (a) => finish(await dibImageList({ configFile: a.config, load: loadOptions(a), json: a.json })))
  .command('image-list', 'list image uploads and what needs attention', (y) => y.option('json', JSON_OPTION),
    async (a) => finish(await imageList({ configFile: a.config, load: loadOptions(a), json: a.json })))
  .command('image-status', 'show per diskimage whether builds are paused or requested', (y) => y.option('json', JSON_OPTION),
    async (a) => finish(await imageStatus({ configFile: a.config, load: loadOptions(a), json: a.json })))
  .command('image-build <diskimage>', 'request a build of a diskimage', (y) => y
    .positional('diskimage', { type: 'string', demandOption: true, describe: 'diskimage name' })
    .option('follow', { type: 'boolean', default: false, describe: 'wait for the build, then for each of its uploads, showing their progress' })
    .option('timeout', numberFlag('--timeout', SECONDS, 'seconds to follow (default: build-timeout + the longest image-upload-timeout + 600)')),
  async (a) => finish(await imageBuild({
    configFile: a.config, load: loadOptions(a), diskimage: String(a.diskimage), follow: a.follow, timeoutSeconds: a.timeout,
    live, signal: a.follow ? interruptSignal() : undefined,
  })))
  .command('image-delete [id]', 'delete a build (and its uploads), or one upload', (y) => y
    .positional('id', { type: 'string', describe: 'build id (<diskimage>-<10 digits>)' })
    .option('provider', { type: 'string', describe: 'provider of the upload' })
    .option('image', { type: 'string', describe: 'diskimage of the upload' })
    .option('build-id', { type: 'string', describe: 'build of the upload' })
    .option('upload-id', { type: 'string', describe: 'upload id' })
    .example('$0 image-delete ubuntu-jammy-0000000003', 'delete a build: its uploads first, then its files')
    .example('$0 image-delete --provider cloud-a --image ubuntu-jammy --build-id ubuntu-jammy-0000000003 --upload-id 0000000007', 'delete one upload'),
  async (a) => finish(await imageDelete({
    configFile: a.config, load: loadOptions(a), build: str(a.id), provider: str(a.provider), image: str(a.image),
    buildId: str(a.buildId), uploadId: str(a.uploadId),
  })))
  .command('dib-image-delete <id>', 'delete a build (Nodepool 3.x name of image-delete <id>)', (y) => y
    .positional('id', { type: 'string', demandOption: true, describe: 'build id (<diskimage>-<10 digits>)' }),
  async (a) => finish(await dibImageDelete({ configFile: a.config, load: loadOptions(a), build: String(a.id) })))
  .command('image-pause <diskimage>', "pause a diskimage's builds, or its uploads to one provider", (y) => y
    .positional('diskimage', { type: 'string', demandOption: true })
    .option('provider', { type: 'string', describe: 'pause only the uploads to this provider' })
    .option('reason', { type: 'string', describe: 'shown in dib-image-list / image-list' }),
  async (a) => finish(await imagePause({ configFile: a.config, load: loadOptions(a), diskimage: String(a.diskimage), provider: str(a.provider), reason: str(a.reason) })))
  .command('image-unpause <diskimage>', 'remove an operator pause', (y) => y
    .positional('diskimage', { type: 'string', demandOption: true })
    .option('provider', { type: 'string', describe: 'unpause only the uploads to this provider' }),
  async (a) => finish(await imageUnpause({ configFile: a.config, load: loadOptions(a), diskimage: String(a.diskimage), provider: str(a.provider) })))
  .command('image-pin <diskimage> <build-id>', "pin a diskimage's launches to a build (whatever is newer)", (y) => y
    .positional('diskimage', { type: 'string', demandOption: true })
    .positional('build-id', { type: 'string', demandOption: true, describe: 'build id (<diskimage>-<10 digits>) with a ready upload' })
    .option('provider', { type: 'string', describe: 'pin only the launches on this provider' })
    .option('reason', { type: 'string', describe: 'shown with the pin' }),
  async (a) => finish(await imagePin({
    configFile: a.config, load: loadOptions(a), diskimage: String(a.diskimage), buildId: String(a.buildId), provider: str(a.provider), reason: str(a.reason),
  })))
  .command('image-unpin <diskimage>', 'remove a pin', (y) => y
    .positional('diskimage', { type: 'string', demandOption: true })
    .option('provider', { type: 'string', describe: "remove this provider's pin (default: the diskimage-wide one)" }),
  async (a) => finish(await imageUnpin({ configFile: a.config, load: loadOptions(a), diskimage: String(a.diskimage), provider: str(a.provider) })))
  .command('image-revoke <build-id>', 'revoke a build: the previous one serves its launches', (y) => y
    .positional('build-id', { type: 'string', demandOption: true, describe: 'build id (<diskimage>-<10 digits>)' })
    .option('reason', { type: 'string', describe: 'shown with the revocation' })
    .option('nodes', { choices: ['keep', 'delete-ready'] as const, default: 'keep' as const, describe: 'delete-ready: also delete the idle ready nodes booted from it' }),
  async (a) => finish(await imageRevoke({ configFile: a.config, load: loadOptions(a), buildId: String(a.buildId), reason: str(a.reason), nodes: a.nodes })))
  .command('image-unrevoke <build-id>', 'undo image-revoke (and a failed canary\'s revocation)', (y) => y
    .positional('build-id', { type: 'string', demandOption: true, describe: 'build id (<diskimage>-<10 digits>)' }),
  async (a) => finish(await imageUnrevoke({ configFile: a.config, load: loadOptions(a), buildId: String(a.buildId) })))
  .command('image-promote <build-id>', "end a build's canary: it serves every launch", (y) => y
    .positional('build-id', { type: 'string', demandOption: true, describe: 'build id (<diskimage>-<10 digits>)' }),
  async (a) => finish(await imagePromote({ configFile: a.config, load: loadOptions(a), buildId: String(a.buildId) })))
  .command('list', 'list nodes', (y) => y
    .option('detail', { type: 'boolean', default: false, describe: 'add pool, hostname, private IPv4, AZ, port, launcher, allocation and hold' })
    .option('json', JSON_OPTION),
  async (a) => finish(await list({ configFile: a.config, load: loadOptions(a), detail: a.detail, json: a.json })))
  .command('delete <id>', 'delete a node (the launcher deletes it, or --now here)', (y) => y
    .positional('id', { type: 'string', demandOption: true, describe: 'node id' })
    .option('now', { type: 'boolean', default: false, describe: 'delete the server and the record now, from this process' })
    .option('json', JSON_OPTION),
  async (a) => finish(await deleteNode({
    configFile: a.config, load: loadOptions(a), id: String(a.id), immediately: a.now, json: a.json, imageServices: await loadImageServices(), log: cliLog(),
  })))
  .command('hold <id>', 'hold a node until released or expired', (y) => y
    .positional('id', { type: 'string', demandOption: true, describe: 'node id' })
    .option('reason', { type: 'string', describe: 'shown by list --detail' })
    .option('expire', numberFlag('--expire', SECONDS, 'seconds until the held node is deleted'))
    .option('json', JSON_OPTION),
  async (a) => finish(await hold({ configFile: a.config, load: loadOptions(a), id: String(a.id), reason: str(a.reason), expireSeconds: a.expire, json: a.json })))
  .command('release <id>', 'hand back a node (in use, held or ready)', (y) => y
    .positional('id', { type: 'string', demandOption: true, describe: 'node id' })
    .option('json', JSON_OPTION),
  async (a) => finish(await release({ configFile: a.config, load: loadOptions(a), id: String(a.id), json: a.json })))
  .command('request <labels..>', 'request nodes; --wait takes them in use when fulfilled', (y) => y
    .positional('labels', { type: 'string', array: true, demandOption: true, describe: 'labels, in order (repeats allowed)' })
    .option('wait', { type: 'boolean', default: false, describe: 'wait for the nodes (the request vanishes if interrupted)' })
    .option('timeout', numberFlag('--timeout', SECONDS, 'seconds to wait (default 600)'))
    .option('priority', numberFlag('--priority', int({ min: 0, max: 999 }), 'lower is served first (default 100)'))
    .option('provider', { type: 'string', describe: 'preferred provider' })
    .option('json', JSON_OPTION),
  async (a) => finish(await request({
    configFile: a.config, load: loadOptions(a), labels: (a.labels as unknown[]).map(String), wait: a.wait, timeoutSeconds: a.timeout,
    priority: a.priority, provider: str(a.provider), json: a.json, live, signal: a.wait ? interruptSignal() : undefined,
  })))
  .command('request-list', 'list node requests', (y) => y.option('json', JSON_OPTION),
    async (a) => finish(await requestList({ configFile: a.config, load: loadOptions(a), json: a.json })))
  .command('label-list', 'list labels with their node counts', (y) => y.option('json', JSON_OPTION),
    async (a) => finish(await labelList({ configFile: a.config, load: loadOptions(a), json: a.json })))
  .command('info <provider>', "show a provider's image builds and nodes", (y) => y
    .positional('provider', { type: 'string', demandOption: true })
    .option('json', JSON_OPTION),
  async (a) => finish(await info({ configFile: a.config, load: loadOptions(a), provider: String(a.provider), json: a.json })))
  .command('erase <provider>', "forget a provider's records (not its cloud resources)", (y) => y
    .positional('provider', { type: 'string', demandOption: true })
    .option('force', { type: 'boolean', default: false, describe: 'do not ask' }),
  async (a) => finish(await erase({ configFile: a.config, load: loadOptions(a), provider: String(a.provider), force: a.force, confirm })))
  .command('export-image-data <file>', 'write the image records (builds, uploads, pauses, build requests, sequences) to a file', (y) => y
    .positional('file', { type: 'string', demandOption: true, describe: 'where to write (mode 0600)' })
    .option('force', { type: 'boolean', default: false, describe: 'replace the file if it exists' }),
  async (a) => finish(await exportImageData({ configFile: a.config, load: loadOptions(a), file: String(a.file), force: a.force })))
  .command('import-image-data <file>', 'add the image records of an export-image-data file to the store (never overwrites)', (y) => y
    .positional('file', { type: 'string', demandOption: true, describe: 'written by export-image-data' }),
  async (a) => finish(await importImageData({ configFile: a.config, load: loadOptions(a), file: String(a.file) })))
  .command('alien-image-list [provider]', 'list cloud images no upload record accounts for', (y) => y
    .positional('provider', { type: 'string' })
    .option('timeout', numberFlag('--timeout', SECONDS, 'seconds each provider\'s listing may take (default 30)'))
    .option('json', JSON_OPTION),
  async (a) => {
    finish(await alienImageList({ configFile: a.config, load: loadOptions(a), provider: str(a.provider), json: a.json, timeoutSeconds: a.timeout, imageServices: await loadImageServices(), log: cliLog() }));
    // A cloud that stopped answering leaves its request open until the HTTP idle timeout; the
    // command is done, so do not wait for it.
    process.exit(process.exitCode);
  })
  .command('config-validate', 'validate the configuration file (and the secure file); warnings on stderr', (y) => y, async (a) => finish(await configValidate(String(a.config), loadOptions(a))))
  .command('create-auth-token', 'print a bearer token for the web write API, signed with an HS256 authenticator of webapp.auth', (y) => y
    .option('user', { type: 'string', demandOption: true, requiresArg: true, describe: 'who the token names (its user claim)' })
    .option('role', { choices: ROLES, demandOption: true, describe: 'read: the console and audit trail; operator: image and node actions; admin: everything' })
    .option('expires', { ...numberFlag('--expires', int({ min: 1 }), 'seconds the token is valid'), demandOption: true })
    .option('authenticator', { type: 'string', requiresArg: true, describe: 'the webapp.auth entry to sign with (default: the first HS256 one)' }),
  async (a) => finish(await createAuthToken({
    configFile: a.config, load: loadOptions(a), user: String(a.user), role: a.role, expiresS: a.expires, authenticator: str(a.authenticator),
  })))
  .completion('completion', 'print a bash completion script (zsh when $SHELL is zsh): nodepool completion >> ~/.bashrc')
  .demandCommand(1, NO_COMMAND)
  .strict()
  .epilogue(EXIT_CODES_HELP)
  .wrap(Math.min(120, process.stdout.columns ?? 100))
  .fail((msg, err, y) => {
    // Commands catch their own errors, so anything here is about the command line.
    if (msg === NO_COMMAND) y.showHelp();
    process.stderr.write(`${msg ?? err?.message ?? 'usage error'}\n`);
    process.exit(EXIT.usage);
  })
  .parseAsync();
