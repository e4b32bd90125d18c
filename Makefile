# beacond: everything a fresh Debian 12 machine needs is installed by these targets, each only
# what it needs (docs/install.md): building and running (deps-build), the tests (deps), the
# real-stack test (deps-stack), the benchmarks (deps-bench).
SHELL      := /bin/bash
# A failing command in a pipe (swift build | filter) fails the recipe.
.SHELLFLAGS := -o pipefail -c
SWIFT      ?= swift
SUDO       := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Build and run: BlueZ and libdbus headers for the CBlueZ shim, libmosquitto for the MQTT
# publisher (CMosquitto), pkg-config to find them.
APT_BUILD  := libbluetooth-dev libdbus-1-dev libmosquitto-dev pkg-config
# Tests: Python and OpenSSL for the test servers; dbus-daemon, Debian's python3-dbus and
# python3-venv for the D-Bus backend's tests (python-dbusmock); bluez for btmon, which reads the hci
# backend's recordings; tmux and chromium for the kiosk tests; systemd (systemd-analyze,
# systemd-socket-activate) and man-db (man, groff) for the install tests; mosquitto and
# mosquitto-clients for the MQTT tests' broker; espeak-ng, alsa-utils (aplay) and sox for the
# kiosk's voice; prometheus for the Grafana dashboard's test (a real Prometheus evaluates every panel's
# query against a live daemon).
APT_TEST   := python3 openssl dbus-daemon python3-dbus python3-venv python3-gi bluez tmux chromium \
	systemd man-db mosquitto mosquitto-clients espeak-ng alsa-utils sox prometheus
# python-dbusmock from PyPI in a venv over Debian's python3 (which sees python3-dbus); Debian's own
# python3-dbusmock 0.28 has a signal bug. Tests find it at $(VENV)/bin/python3. prometheus-client:
# its text-format parser reads `beacond run --metrics` in the metrics tests.
VENV       := .venv
DBUSMOCK   := python-dbusmock>=0.38
# The real-stack test (make test-stack): QEMU boots Debian's kernel, whose Bluetooth modules
# (hci_vhci) and busybox make the guest's initramfs; BlueZ's btvirt, btmon and bluetoothd run in
# it; tshark decodes btmon's files on the host.
# The systemd boot's scenario uses procps (pgrep, ps), iproute2 (ss) and curl (the web kiosk).
APT_STACK  := qemu-system-x86 linux-image-amd64 busybox-static cpio kmod bluez bluez-test-tools dbus tshark \
	procps iproute2 curl
PROMCLIENT := prometheus-client>=0.20
# Benchmark: tshark is the reference decoder.
APT_BENCH  := tshark time
BIN        := .build/debug/beacond
# SwiftPM's notice about files in a dependency's checkout (swift-distributed-tracing's
# CMakeLists.txt, pulled in by swift-service-lifecycle), its first line and the paths it lists, is
# not about beacond and cannot be fixed here: it is left out of the build's output, which otherwise
# prints no warning (warnings are errors in beacond's own targets).
SWIFTPM_NOTICE := /'swift-distributed-tracing': found [0-9]* file(s) which are unhandled/d; \
	/^ *\/.*\/checkouts\/swift-distributed-tracing\//d
QUIET_NOTICE   := 2>&1 | sed -u "$(SWIFTPM_NOTICE)"

.PHONY: all deps deps-build deps-bench deps-stack deps-deb build release deb lint test test-stack demo demo-live demo-stop \
	bench bench-kiosk bench-report bench-memory clean install uninstall fuzz fuzz-pure

all: build

# Installs only the packages that are missing.
define apt_install
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

deps-build:
	$(call apt_install,$(APT_BUILD))

deps: deps-build
	$(call apt_install,$(APT_TEST))
	@if ! $(VENV)/bin/python3 -c 'import dbusmock, dbus, prometheus_client' 2>/dev/null; then \
		echo "installing: $(DBUSMOCK) $(PROMCLIENT) in $(VENV)"; \
		/usr/bin/python3 -m venv --system-site-packages $(VENV) && \
		$(VENV)/bin/pip install -q -U "$(DBUSMOCK)" "$(PROMCLIENT)"; \
	fi

deps-bench: deps
	$(call apt_install,$(APT_BENCH))

deps-stack: deps
	$(call apt_install,$(APT_STACK))

build: deps-build
	$(SWIFT) build $(QUIET_NOTICE)

# Style: `swift format lint --strict` with the checked-in .swift-format, no line over 120 columns,
# and no source file over 400 lines unless its header says why it is one unit ("One unit:"). Then
# the build with the tests: warnings are errors in beacond's targets (Package.swift), so a new
# warning fails lint.
SWIFT_DIRS := Sources Tests Benchmarks
lint: deps-build
	$(SWIFT) format lint --strict --parallel --recursive $(SWIFT_DIRS) Package.swift
	@long=$$(grep -rn --include='*.swift' '.\{121,\}' $(SWIFT_DIRS) | cut -c1-100); \
		if [ -n "$$long" ]; then echo "lines over 120 columns:"; echo "$$long"; exit 1; fi
	@big=$$(find $(SWIFT_DIRS) -name '*.swift' | while read f; do \
		[ $$(wc -l < "$$f") -gt 400 ] && ! head -15 "$$f" | grep -q 'One unit:' && echo "$$f: $$(wc -l < "$$f") lines"; \
		done; true); if [ -n "$$big" ]; then echo "files over 400 lines:"; echo "$$big"; exit 1; fi
	@waits=$$(grep -rnE 'Mirror\(|usleep|[^a-zA-Z_.]sleep\(|Thread\.sleep|Task\.sleep' Sources); \
		if [ -n "$$waits" ]; then echo "timed sleeps or Mirror in Sources (docs/threads.md):"; echo "$$waits"; exit 1; fi
	@threads=$$(grep -rn 'PosixThread\.start' Sources | grep -v '^Sources/BeacondClient/System/BlockingThreadBridge.swift:'); \
		if [ -n "$$threads" ]; then echo "threads started outside BlockingThreadBridge:"; echo "$$threads"; exit 1; fi
	$(SWIFT) build --build-tests $(QUIET_NOTICE)

# Three runs, so that tests which bound real time (the remote poller against a local server, the
# scanner backends' threads and shutdowns) never wait behind tests that block Swift's two
# cooperative threads (the end-to-end tests block on the binary's pipes; some socket and logging
# tests wait synchronously). All three run even when one fails; then the fuzz targets. The last
# line sums Swift Testing's output: "tests: N passed, N failed, N skipped" (docs/testing.md).
TIMED_SUITES := RemoteFetchTests|RemoteTLSTests|RemotePollerTests|RemotePollerLifecycleTests|RemotePollerDocumentTests|HCIScanner|BlueZScannerBackendTests|HCIAdvertiserTests|BlueZAdvertiserTests|BeaconHeartbeatTests
TEST_LOG := .build/test.log
test: deps lint
	@rm -f $(TEST_LOG); failed=0; \
	$(SWIFT) test --skip-build --skip EndToEndTests --skip '$(TIMED_SUITES)' 2>&1 | tee -a $(TEST_LOG) || failed=1; \
	$(SWIFT) test --skip-build --filter '$(TIMED_SUITES)' 2>&1 | tee -a $(TEST_LOG) || failed=1; \
	$(SWIFT) test --skip-build --filter EndToEndTests 2>&1 | tee -a $(TEST_LOG) || failed=1; \
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=5 || failed=1; \
	scripts/test-summary.sh $(TEST_LOG); \
	exit $$failed

# libFuzzer targets (docs/robustness.md, "Fuzzing"), compiled with swiftc straight from Sources/
# into .build/fuzz (no SwiftPM, no sanitized NIO): every target for FUZZ_SECONDS each, one line per
# target ("fuzz TARGET: RUNS runs, CRASHES crashes"), non-zero when any crashed. make test builds and
# runs every target for 5 s each, so none can stop building unnoticed. fuzz-pure: only the targets
# over BLEPayload and CircuitState. The BeacondCore targets link the debug build's dependencies
# (built first when missing) and its system libraries (libdbus, libbluetooth, libmosquitto).
FUZZ_SECONDS ?= 60
fuzz: deps-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) Fuzz/run.sh --all
fuzz-pure:
	@FUZZ_SECONDS=$(FUZZ_SECONDS) Fuzz/run.sh --pure

# The scanners on the real Linux Bluetooth stack (docs/testing.md, "The real-stack test"): four QEMU boots
# (TCG, no KVM needed) of Debian's kernel with btvirt's virtual controllers: the hci backend on
# Bluetooth 4.x LE-only controllers (legacy scanning) and on 5.2 controllers (extended scanning),
# the bluez backend against a real dbus-daemon and bluetoothd (with and without -E), then the
# Debian package under Debian's systemd as PID 1 (install, the unit as shipped, watchdog, socket
# activation, kiosks, upgrade, purge). The guests run the static release binary (make release;
# the package carries the same one) from the host's root (9p, read-only) and write their results
# to $(STACK_RESULTS); Tests/Stack/check.py asserts on them here. Each boot's time is bounded,
# and the boots together must stay within STACK_BUDGET_S (builds not counted).
STACK_RESULTS  := .build/stack
STACK_BUDGET_S := 900
STACK_UPGRADE  := $(STACK_RESULTS)/upgrade
test-stack: deps-stack deb
	rm -rf $(STACK_UPGRADE)
	scripts/build-deb.sh $(RELEASE) $(STACK_UPGRADE) "$$($(RELEASE) --version)+upgrade1" >/dev/null
	@started=$$(date +%s); failed=0; \
	Tests/Stack/boot.sh guest-hci-legacy.sh $(STACK_RESULTS)/legacy 300 || failed=1; \
	Tests/Stack/boot.sh guest-hci.sh $(STACK_RESULTS)/hci 300 || failed=1; \
	Tests/Stack/boot.sh guest-bluez.sh $(STACK_RESULTS)/bluez 200 || failed=1; \
	Tests/Stack/boot.sh --systemd guest-systemd.sh $(STACK_RESULTS)/systemd 420 || failed=1; \
	took=$$(( $$(date +%s) - started )); \
	echo "test-stack: the four boots took $$took s (budget $(STACK_BUDGET_S) s)"; \
	python3 Tests/Stack/check.py $(RELEASE) $(STACK_RESULTS)/legacy $(STACK_RESULTS)/hci $(STACK_RESULTS)/bluez \
		$(STACK_RESULTS)/systemd || failed=1; \
	if [ $$took -gt $(STACK_BUDGET_S) ]; then echo "test-stack: over the $(STACK_BUDGET_S) s budget"; failed=1; fi; \
	exit $$failed

# The bundled example (a race weekend's flag changes, generated by beacond's own encoder and
# writer) through the live daemon on the replay backend at 20x: the kiosk's frames as they come
# (scripts/demo.sh), the timeline, `beacond status`. No Bluetooth hardware is needed. demo-live
# leaves a demo daemon running on out/beacond.sock (the example in a loop, race control read from
# out/race-control.json) and prints what to try; demo-stop stops it.
demo: build
	@scripts/demo.sh $(BIN) out
demo-live: build
	@scripts/demo-live.sh start $(BIN) out
demo-stop:
	@scripts/demo-live.sh stop $(BIN) out

# The binary to install: release, with the Swift runtime and Foundation linked in statically, so
# a kiosk needs no Swift toolchain and the daemon maps only what it uses (idle RSS 25 MB instead
# of 30 MB with the shared libraries). Its own scratch folder keeps `make build` incremental.
# Linked with -z now (full RELRO, as Debian's hardening flags ask: lintian's hardening-no-bindnow).
RELEASE := .build-release/release/beacond
release: deps-build
	$(SWIFT) build -c release --static-swift-stdlib -Xlinker -z -Xlinker now --scratch-path .build-release \
		--product beacond $(QUIET_NOTICE)
	@echo "built $(RELEASE)"

# The Debian package (docs/install.md, "The Debian package"): $(DIST)/beacond_VERSION_amd64.deb
# from the release binary, VERSION being what `beacond --version` prints. scripts/build-deb.sh
# stages it with `make install` under /usr (the system units in /lib/systemd/system, as
# bookworm's debhelper puts them), takes Depends from dpkg-shlibdeps, and fails when lintian
# reports an error (warnings and info are printed). dpkg-dev: dpkg-deb, dpkg-shlibdeps; lintian.
# A test package that upgrades it: scripts/build-deb.sh $(RELEASE) $(DIST) 0.1.0+upgrade1.
APT_DEB := dpkg-dev lintian
DIST    := dist
deps-deb:
	$(call apt_install,$(APT_DEB))
deb: deps-deb release
	scripts/build-deb.sh $(RELEASE) $(DIST)

# Installs the binary, the man page, the docs, the example config and the systemd files under
# PREFIX (default /usr/local), below DESTDIR when given (a staging root for packages and tests).
# System units go to $(PREFIX)/lib/systemd/system and the browser's user unit to
# $(PREFIX)/lib/systemd/user: systemd searches both for /usr/local and /usr, and /etc/systemd/system
# stays the administrator's, for drop-ins and overrides. sysusers.d and tmpfiles.d likewise. The
# units name /usr/local/bin/beacond and /usr/local/share/doc/beacond; the copies installed name
# BINDIR and DOCDIR. The config goes to /etc/beacond/beacond.yaml (not under PREFIX: it is the
# machine's) unless one is there already. BINARY: the binary to install, `make release`'s by default.
# Without DESTDIR, on a machine running systemd, it then creates the beacond user and its
# directories and reloads systemd; it enables nothing.
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
MANDIR      ?= $(PREFIX)/share/man
DOCDIR      ?= $(PREFIX)/share/doc/beacond
LANGDIR     ?= $(PREFIX)/share/beacond/languages
UNITDIR     ?= $(PREFIX)/lib/systemd/system
USERUNITDIR ?= $(PREFIX)/lib/systemd/user
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
SYSCONFDIR  ?= /etc
BINARY      ?= $(RELEASE)
SYSTEM_UNITS := beacond.service beacond.socket beacond-kiosk@.service beacond-kiosk-web.service
USER_UNITS   := beacond-kiosk-browser.service
DOCS         := README.md $(wildcard docs/*.md) docs/beacond-kiosk-browser.desktop
# The kiosk's catalogues, found by the binary at $(PREFIX)/share/beacond/languages (docs/kiosk.md).
LANGUAGES    := $(wildcard languages/*.yaml)
# The units' and the man page's paths to the binary and the docs, written for PREFIX.
UNIT_PATHS   := -e 's|/usr/local/bin/beacond|$(BINDIR)/beacond|g' -e 's|/usr/local/share/doc/beacond|$(DOCDIR)|g'
install:
	@[ -x "$(BINARY)" ] || { echo "no binary at $(BINARY): run make release first, or pass BINARY=" >&2; exit 1; }
	install -D -m 0755 $(BINARY) $(DESTDIR)$(BINDIR)/beacond
	install -d -m 0755 $(DESTDIR)$(MANDIR)/man8
	sed $(UNIT_PATHS) -e 's|/usr/local|$(PREFIX)|g' docs/beacond.8 > $(DESTDIR)$(MANDIR)/man8/beacond.8 && chmod 0644 $(DESTDIR)$(MANDIR)/man8/beacond.8
	install -d -m 0755 $(DESTDIR)$(DOCDIR)
	install -m 0644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	install -m 0644 systemd/beacond.yaml $(DESTDIR)$(DOCDIR)/beacond.yaml.example
	install -d -m 0755 $(DESTDIR)$(LANGDIR)
	install -m 0644 $(LANGUAGES) $(DESTDIR)$(LANGDIR)/
	install -d -m 0755 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(USERUNITDIR)
	for unit in $(SYSTEM_UNITS); do \
		sed $(UNIT_PATHS) systemd/$$unit > $(DESTDIR)$(UNITDIR)/$$unit && chmod 0644 $(DESTDIR)$(UNITDIR)/$$unit || exit 1; \
	done
	for unit in $(USER_UNITS); do \
		sed $(UNIT_PATHS) systemd/$$unit > $(DESTDIR)$(USERUNITDIR)/$$unit && chmod 0644 $(DESTDIR)$(USERUNITDIR)/$$unit || exit 1; \
	done
	install -D -m 0644 systemd/beacond-sysusers.conf $(DESTDIR)$(SYSUSERSDIR)/beacond.conf
	install -D -m 0644 systemd/beacond-tmpfiles.conf $(DESTDIR)$(TMPFILESDIR)/beacond.conf
	install -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/beacond
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/beacond/beacond.yaml ]; then \
		echo "kept $(DESTDIR)$(SYSCONFDIR)/beacond/beacond.yaml (the example is $(DOCDIR)/beacond.yaml.example)"; \
	else \
		echo "install -m 0644 systemd/beacond.yaml $(DESTDIR)$(SYSCONFDIR)/beacond/beacond.yaml"; \
		install -m 0644 systemd/beacond.yaml $(DESTDIR)$(SYSCONFDIR)/beacond/beacond.yaml; \
	fi
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		echo "systemd-sysusers, systemd-tmpfiles --create, systemctl daemon-reload"; \
		systemd-sysusers $(SYSUSERSDIR)/beacond.conf && \
		systemd-tmpfiles --create $(TMPFILESDIR)/beacond.conf && \
		systemctl daemon-reload; \
	fi

# Removes what install installed. The config stays when it differs from the example (it holds the
# site's settings); the beacond user, /var/lib/beacond and /run/beacond stay too (sysusers.d(5):
# users are never removed, and the state is the site's). Stop and disable the units first.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/beacond $(DESTDIR)$(MANDIR)/man8/beacond.8
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(DOCS)) beacond.yaml.example)
	rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null || true
	rm -f $(addprefix $(DESTDIR)$(LANGDIR)/,$(notdir $(LANGUAGES)))
	rmdir $(DESTDIR)$(LANGDIR) $(DESTDIR)$(PREFIX)/share/beacond 2>/dev/null || true
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(SYSTEM_UNITS)) $(addprefix $(DESTDIR)$(USERUNITDIR)/,$(USER_UNITS))
	rm -f $(DESTDIR)$(SYSUSERSDIR)/beacond.conf $(DESTDIR)$(TMPFILESDIR)/beacond.conf
	@if cmp -s systemd/beacond.yaml $(DESTDIR)$(SYSCONFDIR)/beacond/beacond.yaml; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/beacond/beacond.yaml; \
		rmdir $(DESTDIR)$(SYSCONFDIR)/beacond 2>/dev/null || true; \
	elif [ -e $(DESTDIR)$(SYSCONFDIR)/beacond/beacond.yaml ]; then \
		echo "kept $(DESTDIR)$(SYSCONFDIR)/beacond/beacond.yaml: it differs from the example"; \
	fi
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi

# Decode throughput against tshark on a large capture built from ../shared/captures, and the whole
# `beacond replay --all [--json]` process beside it (the output path, with the static release
# binary), then the fusion engine (a venue's steady state and a flood of 1,000,000
# distinct keys), then the daemon (latency, fan-out, HCI path; idle cost of the static release
# binary), then `beacond report` on a 24-hour venue day. The benchmarks are executables of their
# own under Benchmarks/, not part of the beacond binary. Every figure is printed and also written
# to $(BENCH_RESULTS).
BENCH_RESULTS := .build/bench/results.json
bench: deps-bench
	rm -f $(BENCH_RESULTS)
	$(SWIFT) build -c release --scratch-path .build-bench --product beacond-bench
	$(SWIFT) build -c release --scratch-path .build-bench --product beacond-daemon-bench
	$(MAKE) release
	.build-bench/release/beacond-bench --beacond $(RELEASE) --results $(BENCH_RESULTS)
	.build-bench/release/beacond-bench --engine --results $(BENCH_RESULTS)
	.build-bench/release/beacond-daemon-bench --beacond $(RELEASE) --results $(BENCH_RESULTS)
	python3 Benchmarks/kiosk-latency.py --beacond $(RELEASE)
	Benchmarks/report-scale.sh $(RELEASE) 24

# `beacond report` on a 24-hour venue day (Benchmarks/venue-day.py: 200 beacons in 20 zones, a
# flag change every 5 s, 17.6 million reports): the page under 5 MB and open in Chromium in under
# 2 s, against the bundled example's page in the same run (docs/report.md, "Scale").
bench-report: deps-bench release
	Benchmarks/report-scale.sh $(RELEASE) 24

# How fast the kiosks follow a published change: socket, SSE, the page's DOM in Chromium and the
# terminal kiosk's redraw, over 200 changes (docs/kiosk.md, "How fast the screen follows").
bench-kiosk: deps release
	python3 Benchmarks/kiosk-latency.py --beacond $(RELEASE)

# Streams a 1 GB capture through `beacond replay` and prints its peak memory.
BIG_CAPTURE := /tmp/beacond-1g.btsnoop
bench-memory: deps-bench
	$(SWIFT) run -c release --scratch-path .build-bench beacond-bench --reports 16000000 --runs 1 --no-tshark --out $(BIG_CAPTURE)
	$(MAKE) release
	/usr/bin/time -f "beacond replay of $$(du -h $(BIG_CAPTURE) | cut -f1): peak RSS %M KiB, %e s" \
		$(RELEASE) replay --json $(BIG_CAPTURE) > /dev/null
	rm -f $(BIG_CAPTURE)

clean:
	rm -rf .build .build-* out dist
