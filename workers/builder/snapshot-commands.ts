/**
 * What a snapshot build runs on its instance over SSH (pure): copying in the setup and its
 * environment, running the setup, and sealing the instance before its snapshot (removing
 * the build's files and key, resetting cloud-init so every node booted from the image is a
 * first boot with host keys of its own, then powering off).
 */

/** The setup's file in the login user's home on the instance. */
export const SETUP_FILE = '.nodepool-setup';
/** The setup's environment, sourced before it runs (values never on a command line). */
export const SETUP_ENV_FILE = '.nodepool-setup.env';

/** One word for a POSIX shell, single-quoted. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The env file's text: `export NAME='value'` lines (names checked by the config). */
export function setupEnvText(vars: Readonly<Record<string, string>>): string {
  return Object.entries(vars).map(([k, v]) => `export ${k}=${shellQuote(v)}\n`).join('');
}

/** Receives a file on stdin into `name` (mode 0700 for the setup, 0600 for its env). */
export function receiveCommand(name: string, mode: '700' | '600'): string {
  return `umask 077 && cat > ${name} && chmod ${mode} ${name}`;
}

/** Runs the setup with its arguments (after its first) in its environment, output to the build log. */
export function runSetupCommand(setup: readonly string[]): string {
  return `. ./${SETUP_ENV_FILE} && ./${SETUP_FILE}${setup.slice(1).map((a) => ` ${shellQuote(a)}`).join('')} </dev/null 2>&1`;
}

/**
 * Removes the setup's files and the build's key (the authorized_keys line with its comment),
 * resets cloud-init where the image has it (`--machine-id` where that version knows it), and
 * powers off a second after the command returns, so its SSH session ends cleanly.
 */
export function sealCommand(keyComment: string): string {
  return [
    `rm -f ${SETUP_FILE} ${SETUP_ENV_FILE}`,
    `sed -i ${shellQuote(`/ ${keyComment.replace(/[/.[\]*^$\\]/g, '\\$&')}$/d`)} .ssh/authorized_keys`,
    'if command -v cloud-init >/dev/null; then sudo cloud-init clean --logs --machine-id 2>/dev/null || sudo cloud-init clean --logs; fi',
    'sync',
    'sudo sh -c \'(sleep 1; poweroff) >/dev/null 2>&1 &\'',
  ].join(' && ');
}
