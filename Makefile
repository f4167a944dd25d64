# Nodepool (TypeScript). `make test` and `make run` work on a fresh Debian 12 machine with
# Node 20 and npm: they install what they need (apt packages, npm packages) first.
SHELL := /bin/bash
.DEFAULT_GOAL := help

APT_PACKAGES := gearman-job-server gearman-tools qemu-utils openssh-server openssh-client keystone glance-api uwsgi uwsgi-plugin-python3 \
  python3-diskimage-builder debootstrap sudo kpartx parted e2fsprogs squashfs-tools git curl jq python3-yaml \
  procps util-linux openssl chromium zookeeper python3-kazoo iproute2 qemu-system-x86 genisoimage zstd systemd \
  mariadb-server python3-pymysql rabbitmq-server placement-api nova-api nova-conductor nova-scheduler python3-nova neutron-server
# What `make run` runs, and only that (a subset of APT_PACKAGES): gearmand; Keystone and Glance
# under uwsgi on SQLite (no MariaDB, RabbitMQ or Nova); sshd for the static provider; DIB and what
# it calls; qemu-img; QEMU and genisoimage for the qemu provider's VMs.
RUN_APT_PACKAGES := gearman-job-server qemu-utils openssh-server openssh-client keystone glance-api uwsgi uwsgi-plugin-python3 \
  python3-diskimage-builder debootstrap sudo kpartx parted e2fsprogs git curl jq python3-yaml procps util-linux \
  qemu-system-x86 genisoimage
NODE_TEST := node --import tsx test/run.ts

.PHONY: help deps apt-deps npm-deps npm-packages typecheck lint test test-steps test-unit faults bench build pack run run-deps apt-run-deps clean

help:
	@echo "make test   - install dependencies, type-check, lint and run the whole test suite"
	@echo "make run    - start gearmand, a loopback Keystone+Glance and a builder; build and upload an image; serve the console"
	@echo "make bench  - planner pass at scale, upload vs curl, Gearman round trips, node requests and churn (static slots, loopback Nova), the launcher fleet"
	@echo "make pack   - build and pack nodepool-ts-<version>.tgz, the package operators install (docs/install.md)"

deps: apt-deps npm-deps

apt-deps:
	@bash scripts/install-apt-deps.sh $(APT_PACKAGES)

# The packages come first without install scripts; better-sqlite3's native module (the only
# package with one) is built on its own, because without a prebuilt binary to fetch it compiles
# SQLite for about two CPU-minutes, which `make test` overlaps with the type-check and the lint.
SQLITE_NATIVE := node_modules/better-sqlite3/build/Release/better_sqlite3.node
npm-deps: npm-packages $(SQLITE_NATIVE)
npm-packages: node_modules/.package-lock.json
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts
	@touch $@
$(SQLITE_NATIVE): node_modules/.package-lock.json
	npm rebuild better-sqlite3 --no-audit --no-fund

typecheck: npm-packages
	npx tsc --noEmit

lint: npm-packages
	npx eslint .

# Prints how long the whole of it took (installs included); CI's limit is 90 minutes, ours 45.
test:
	@start=$$(date +%s); $(MAKE) --no-print-directory test-steps; rc=$$?; \
	  echo "# make test took $$(( $$(date +%s) - start )) s (exit $$rc)"; exit $$rc

# The runner starts at once, beside better-sqlite3's native build (about 90 s of one core
# compiling SQLite; the runner starts the clouds meanwhile and starts no test file before the
# build's exit code is in .run/native.rc), and beside the type-check and the lint. This kernel
# shares the CPUs between sessions (autogroup), so only a session's own nice ranks it: the
# native build runs ahead of the clouds' start, in a session at -10 (as test/support/ahead.ts
# does for the head start; in ci36, at 0, it took 174 s beside the clouds' start), and the
# type-check and the lint behind everything, in a session at 19, on the cores the tests leave
# idle. Their output and verdict are printed after the tests; either
# failing fails `make test`. Beside them from the start, in the background, the VM files'
# bootable image and saved guest (test/support/prepare-vm-image.ts; the runner waits for them
# or makes them itself).
# $(call in_session,NICE,NAME) command...: runs the command in a session of its own whose autogroup nice is NICE.
in_session = setsid -w sh -c 'echo $(1) > /proc/self/autogroup 2>/dev/null; exec "$$@"' $(2)
test-steps: apt-deps npm-packages
	@mkdir -p .run && rm -f .run/native.rc .run/checks.rc
	@(node --import tsx test/support/prepare-vm-image.ts > .run/prepare-vm-image.log 2>&1 &)
	@($(call in_session,-10,ahead) $(MAKE) --no-print-directory $(SQLITE_NATIVE) > .run/native.log 2>&1; echo $$? > .run/native.rc) &
	@($(call in_session,19,behind) \
	  $(MAKE) --no-print-directory -j2 --output-sync=target typecheck lint > .run/checks.log 2>&1; echo $$? > .run/checks.rc) &
	@NODEPOOL_TEST_NATIVE_RC=.run/native.rc $(NODE_TEST); rc=$$?; \
	  sed 's/^/# head start: /' .run/prepare-vm-image.log; \
	  sed 's/^/# native build: /' .run/native.log; \
	  for i in $$(seq 3600); do [ -s .run/checks.rc ] && break; sleep 1; done; \
	  cat .run/checks.log; checks=$$(cat .run/checks.rc 2>/dev/null || echo "none in an hour"); \
	  echo "# type-check and lint (beside the tests): $$([ "$$checks" = 0 ] && echo passed || echo "FAILED (exit $$checks)")"; \
	  [ $$rc -ne 0 ] || rc=$$checks; exit $$rc

test-unit: npm-deps
	$(NODE_TEST) unit

# The fault suite alone; each scenario appends its figures to the report, printed as a table at the end.
FAULTS_REPORT := .run/faults-report.jsonl
faults: deps
	@mkdir -p .run && rm -f $(FAULTS_REPORT); \
	  NODEPOOL_FAULTS_REPORT=$(CURDIR)/$(FAULTS_REPORT) $(NODE_TEST) test/faults/*.test.ts; rc=$$?; \
	  node --import tsx test/support/fault-report.ts table $(FAULTS_REPORT); exit $$rc

build: npm-deps
	npx tsc -p tsconfig.build.json
	node --import tsx scripts/write-build-info.ts dist/build-info.json

# The release tarball (prepack builds dist/ and records the git revision for --version).
pack: npm-deps
	npm pack --no-audit --no-fund

bench: deps
	node --import tsx bench/planner.ts
	node --import tsx bench/gearman-roundtrip.ts
	node --import tsx bench/upload-throughput.ts --size-mib 2048
	node --import tsx bench/static-requests.ts 100 10 200
	node --import tsx bench/zookeeper-store.ts
	node --import tsx bench/static-churn.ts
	node --import tsx bench/cloud-churn.ts
	node --import tsx bench/fleet.ts
	node --import tsx bench/cli-startup.ts

run: run-deps
	node --import tsx scripts/run-quickstart.ts

# The quick start installs only what it runs (RUN_APT_PACKAGES); `make test` installs everything.
run-deps: apt-run-deps npm-deps

apt-run-deps:
	@bash scripts/install-apt-deps.sh $(RUN_APT_PACKAGES)

clean:
	rm -rf dist .run nodepool-ts-*.tgz
