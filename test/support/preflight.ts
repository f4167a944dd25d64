/**
 * What the test suite needs from the machine, checked once before any test starts, so a
 * missing capability is named in one clear line instead of surfacing as dozens of failures
 * (`make test` installs the packages; this catches a machine where that could not happen).
 */
import { accessSync, constants, existsSync } from 'node:fs';

/** One need: what it is, how to check it, and what to do about it. */
interface Need {
  what: string;
  met: () => boolean;
  fix: string;
}

const executable = (file: string): boolean => {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** Programs from Debian packages, by package. */
const PROGRAMS: Array<[pkg: string, file: string]> = [
  ['gearman-job-server', '/usr/sbin/gearmand'],
  ['qemu-utils', '/usr/bin/qemu-img'],
  ['openssh-server', '/usr/sbin/sshd'],
  ['openssh-client', '/usr/bin/ssh-keyscan'],
  ['python3-diskimage-builder', '/usr/bin/disk-image-create'],
  ['keystone', '/usr/bin/keystone-manage'],
  ['glance-api', '/usr/bin/glance-api'],
  ['uwsgi', '/usr/bin/uwsgi'],
  ['nova-api', '/usr/bin/nova-api'],
  ['neutron-server', '/usr/bin/neutron-server'],
  ['placement-api', '/usr/bin/placement-api'],
  ['mariadb-server', '/usr/sbin/mariadbd'],
  ['rabbitmq-server', '/usr/sbin/rabbitmq-server'],
  ['chromium', '/usr/bin/chromium'],
  ['iproute2', '/usr/sbin/ip'],
  ['qemu-system-x86', '/usr/bin/qemu-system-x86_64'],
  ['genisoimage', '/usr/bin/genisoimage'],
  ['genisoimage', '/usr/bin/isoinfo'],
  // test/support/qemu-resume: the saved guest's state (zstd) and manifest (jq).
  ['zstd', '/usr/bin/zstd'],
  ['jq', '/usr/bin/jq'],
];

/** Files (not programs) from Debian packages, by package: the ZooKeeper server runs from its jar. */
const FILES: Array<[pkg: string, file: string]> = [
  ['zookeeper', '/usr/share/java/zookeeper.jar'],
  ['python3-kazoo', '/usr/lib/python3/dist-packages/kazoo/client.py'],
];

/** What the selected tests need: integration tests the programs, the real-DIB test root and loop devices. */
export function needs(opts: { integration: boolean; realDib: boolean }): Need[] {
  const list: Need[] = [];
  if (!opts.integration) return list;
  for (const [pkg, file] of PROGRAMS) {
    list.push({ what: `${file} (Debian package ${pkg})`, met: () => executable(file), fix: `apt-get install ${pkg} (make test does this)` });
  }
  for (const [pkg, file] of FILES) {
    list.push({ what: `${file} (Debian package ${pkg})`, met: () => existsSync(file), fix: `apt-get install ${pkg} (make test does this)` });
  }
  if (opts.realDib) {
    list.push({ what: 'root (DIB mounts and chroots)', met: () => process.getuid?.() === 0, fix: 'run the tests as root' });
    list.push({ what: 'loop devices (/dev/loop-control)', met: () => existsSync('/dev/loop-control'), fix: 'a machine or container with loop devices' });
  }
  return list;
}

/** The needs not met, as one line each; empty when the machine is ready. */
export function preflight(opts: { integration: boolean; realDib: boolean }): string[] {
  return needs(opts).filter((n) => !n.met()).map((n) => `missing: ${n.what} — ${n.fix}`);
}
