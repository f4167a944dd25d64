#!/usr/bin/python3
"""A kazoo Lock as Zuul and Nodepool take it, for the ZooKeeper store's lock interop test.

usage: kazoo-lock.py HOSTS PATH try   -> prints "acquired" or "refused" (non-blocking), exits
       kazoo-lock.py HOSTS PATH hold  -> takes the lock (waits up to 10 s), prints "held",
                                         releases when stdin closes or says anything, exits
HOSTS may end in a chroot (127.0.0.1:2181/chroot). Run with Debian's /usr/bin/python3.
"""
import sys

from kazoo.client import KazooClient


def main():
    hosts, path, mode = sys.argv[1:4]
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=10)
    try:
        lock = zk.Lock(path, "kazoo-test")
        if mode == "try":
            got = lock.acquire(blocking=False)
            print("acquired" if got else "refused", flush=True)
            if got:
                lock.release()
        elif mode == "hold":
            if not lock.acquire(timeout=10):
                print("timeout", flush=True)
                return 1
            print("held", flush=True)
            sys.stdin.readline()
            lock.release()
            print("released", flush=True)
        else:
            print("unknown mode %s" % mode, file=sys.stderr)
            return 2
    finally:
        zk.stop()
        zk.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
