/**
 * Config reloads for the daemons: SIGHUP, or a change of the config file. The directory is
 * watched, not the file, because editors and config management replace files by rename.
 */
import { watch } from 'node:fs';
import path from 'node:path';

/** Calls `reload(reason)` on SIGHUP and (debounced) when `file` changes; `close()` stops both. */
export function onConfigChange(file: string, reload: (reason: string) => void): { close(): void } {
  let timer: NodeJS.Timeout | undefined;
  const watcher = watch(path.dirname(path.resolve(file)), (_event, name) => {
    if (name !== path.basename(file)) return;
    clearTimeout(timer);
    timer = setTimeout(() => reload('file changed'), 300);
  });
  const onHup = (): void => reload('SIGHUP');
  process.on('SIGHUP', onHup);
  return {
    close() {
      watcher.close();
      clearTimeout(timer);
      process.off('SIGHUP', onHup);
    },
  };
}
