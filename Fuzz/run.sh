#!/usr/bin/env bash
# Builds and runs the libFuzzer targets (docs/robustness.md, "Fuzzing").
#
#   Fuzz/run.sh [--pure | --core | --all] [--build-only] [TARGET...]
#
# --pure (the default): the targets over BLEPayload and CircuitState, compiled with swiftc
# straight from Sources/ (no SwiftPM, no NIO): the modules once into .build/fuzz/modules, then
# one small executable per target. --core: the targets over BeacondCore, built by SwiftPM in its
# own scratch path (.build-fuzz) with BEACOND_FUZZ=1, which adds them to the package; `@main`
# (Sources/beacond) is never part of them. --all: both.
#
# Each target runs for FUZZ_SECONDS (default 60) over .build/fuzz/corpus/TARGET (kept between
# runs), seeded from its own generator (fixtures built with the project's encoders, and the
# captures in FUZZ_CAPTURES, default ../shared/captures, read in place). One line per target:
#   fuzz TARGET: RUNS runs, CRASHES crashes
# and a non-zero exit when any target crashed. Crashing inputs are kept in .build/fuzz/artifacts/TARGET.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=.build/fuzz
SECONDS_EACH=${FUZZ_SECONDS:-60}
RSS_MB=${FUZZ_RSS_MB:-1024}
CAPTURES=${FUZZ_CAPTURES:-../shared/captures}
SWIFTC=${SWIFTC:-swiftc}
# Swift's backtracer would spend ~30 s symbolicating each crash; ASan prints the stack instead.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:handle_abort=1}

# name | source (under Fuzz/) | module it tests | -max_len
PURE_TARGETS="
georacing|Pure/GeoRacingPayload.swift|BLEPayload|64
ad-structures|Pure/AdvertisingStructures.swift|BLEPayload|512
hci-events|Pure/HCIEvents.swift|BLEPayload|4096
hci-reassembly|Pure/HCIReassembly.swift|BLEPayload|4096
hci-encoder|Pure/HCIEncoderRoundTrip.swift|BLEPayload|2048
capture-btsnoop|Pure/CaptureBTSnoop.swift|BLEPayload|65536
capture-pcap|Pure/CapturePcap.swift|BLEPayload|65536
capture-pcapng|Pure/CapturePcapng.swift|BLEPayload|65536
capture-writers|Pure/CaptureWriterRoundTrip.swift|BLEPayload|4096
circuit-state|Pure/CircuitStateEngine.swift|CircuitState|4096
"
# name | SwiftPM product (Fuzz/Core/PRODUCT/main.swift) | -max_len
CORE_TARGETS="
remote-state|FuzzRemoteState|65536
socket-requests|FuzzSocketRequests|8192
config-yaml|FuzzConfigYAML|16384
dbus-values|FuzzDBusValues|4096
"

mode=pure
build_only=0
selected=()
for arg in "$@"; do
    case "$arg" in
        --pure) mode=pure ;;
        --core) mode=core ;;
        --all) mode=all ;;
        --build-only) build_only=1 ;;
        -*) echo "usage: Fuzz/run.sh [--pure|--core|--all] [--build-only] [TARGET...]" >&2; exit 64 ;;
        *) selected+=("$arg") ;;
    esac
done

wanted() { [ ${#selected[@]} -eq 0 ] || printf '%s\n' "${selected[@]}" | grep -qx "$1"; }

# True when $1 is missing or older than any of the other files.
stale() {
    local target=$1; shift
    [ -e "$target" ] || return 0
    [ -n "$(find "$@" -newer "$target" -print -quit 2>/dev/null)" ]
}

SAN=(-sanitize=fuzzer,address -O -parse-as-library -enable-testing -use-ld=lld)

build_pure_modules() {
    mkdir -p "$OUT/modules" "$OUT/obj" "$OUT/bin"
    local ble=(Sources/BLEPayload/*.swift Sources/BLEPayload/Capture/*.swift)
    if stale "$OUT/obj/BLEPayload.o" "${ble[@]}" Fuzz/run.sh; then
        echo "fuzz build: BLEPayload" >&2
        "$SWIFTC" "${SAN[@]}" -wmo -module-name BLEPayload -emit-module -emit-module-path "$OUT/modules/BLEPayload.swiftmodule" \
            -c "${ble[@]}" -o "$OUT/obj/BLEPayload.o"
    fi
    local circuit=(Sources/CircuitState/*.swift)
    if stale "$OUT/obj/CircuitState.o" "${circuit[@]}" "$OUT/obj/BLEPayload.o"; then
        echo "fuzz build: CircuitState" >&2
        "$SWIFTC" "${SAN[@]}" -wmo -module-name CircuitState -I "$OUT/modules" \
            -emit-module -emit-module-path "$OUT/modules/CircuitState.swiftmodule" \
            -c "${circuit[@]}" -o "$OUT/obj/CircuitState.o"
    fi
}

build_pure_target() {
    local name=$1 source=Fuzz/$2 module=$3
    local objects=("$OUT/obj/BLEPayload.o")
    [ "$module" = CircuitState ] && objects+=("$OUT/obj/CircuitState.o")
    if stale "$OUT/bin/$name" "$source" Fuzz/Support/*.swift "${objects[@]}"; then
        echo "fuzz build: $name" >&2
        "$SWIFTC" "${SAN[@]}" -I "$OUT/modules" -module-name "Fuzz_${name//-/_}" \
            Fuzz/Support/*.swift "$source" "${objects[@]}" -o "$OUT/bin/$name"
        rm -rf "$OUT/seeds/$name"
    fi
}

CORE_BIN=.build-fuzz/debug
build_core_targets() {
    local products=()
    while IFS='|' read -r name product _; do
        [ -n "$name" ] && wanted "$name" && products+=("$product")
    done <<< "$CORE_TARGETS"
    for product in "${products[@]}"; do
        echo "fuzz build: $product (SwiftPM, .build-fuzz)" >&2
        BEACOND_FUZZ=1 swift build --scratch-path .build-fuzz --product "$product" \
            -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -enable-testing
    done
}

failed=0
# run NAME BINARY MAX_LEN [EXTRA_CORPUS]
run_target() {
    local name=$1 binary=$2 max_len=$3 extra=${4:-}
    local corpus=$OUT/corpus/$name seeds=$OUT/seeds/$name artifacts=$OUT/artifacts/$name log=$OUT/logs/$name.log
    mkdir -p "$corpus" "$artifacts" "$OUT/logs"
    if [ ! -d "$seeds" ]; then
        mkdir -p "$seeds"
        local captures=()
        [ -d "$CAPTURES" ] && captures=(FUZZ_CAPTURES="$CAPTURES")
        env "${captures[@]}" FUZZ_WRITE_SEEDS="$seeds" "$binary" > /dev/null
    fi
    local stamp=$artifacts/.started
    touch "$stamp"
    local dirs=("$corpus" "$seeds")
    [ -n "$extra" ] && [ -d "$extra" ] && dirs+=("$extra")
    local status=0
    "$binary" -max_total_time="$SECONDS_EACH" -max_len="$max_len" -rss_limit_mb="$RSS_MB" -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" "${dirs[@]}" > "$log" 2>&1 || status=$?
    local runs crashes
    runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
    crashes=$(find "$artifacts" -newer "$stamp" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
        -o -name 'oom-*' \) | wc -l)
    if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
    echo "fuzz $name: ${runs:-0} runs, $crashes crashes"
    if [ "$crashes" -ne 0 ]; then
        failed=1
        echo "  log: $log; inputs: $artifacts" >&2
        grep -E 'ERROR|fuzz property failed|Fatal error|SUMMARY' "$log" | head -5 | sed 's/^/  /' >&2 || true
    fi
}

if [ "$mode" != core ]; then
    build_pure_modules
    while IFS='|' read -r name source module _; do
        [ -n "$name" ] && wanted "$name" && build_pure_target "$name" "$source" "$module"
    done <<< "$PURE_TARGETS"
fi
if [ "$mode" != pure ]; then build_core_targets; fi
[ "$build_only" = 1 ] && exit 0

if [ "$mode" != core ]; then
    while IFS='|' read -r name _ _ max_len; do
        [ -n "$name" ] && wanted "$name" || continue
        extra=""
        case "$name" in capture-*) extra=$CAPTURES ;; esac
        run_target "$name" "$OUT/bin/$name" "$max_len" "$extra"
    done <<< "$PURE_TARGETS"
fi
if [ "$mode" != pure ]; then
    while IFS='|' read -r name product max_len; do
        [ -n "$name" ] && wanted "$name" && run_target "$name" "$CORE_BIN/$product" "$max_len"
    done <<< "$CORE_TARGETS"
fi
exit "$failed"
