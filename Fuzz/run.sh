#!/usr/bin/env bash
# Builds and runs the libFuzzer targets (docs/robustness.md, "Fuzzing").
#
#   Fuzz/run.sh [--pure | --core | --all] [--build-only] [TARGET...]
#
# Everything is compiled with swiftc straight from Sources/ (no SwiftPM, no NIO): BLEPayload and
# CircuitState once into .build/fuzz/modules, then one small executable per target. --pure (the
# default): the targets over those two modules. --core: the targets over BeacondCore, each built
# from the few BeacondCore files it tests; `@main` (Sources/beacond) is never part of any. --all: both.
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
# The targets over the libraries: each is compiled with swiftc from the BeacondClient and
# BeacondCore files it tests and the pure modules, as one module; what those files import from NIO
# (or, for config-yaml, which compiles all of both libraries: everything) is linked from the debug
# build, never rebuilt with sanitizers.
# name | source | files (under Sources/; *: all of BeacondClient and BeacondCore) | -max_len
# The strict JSON parser and its decoder: race control's documents and the socket's request lines.
JSON_FILES="BeacondClient/Remote/RemoteJSON.swift BeacondClient/Remote/RemoteJSONDecoder.swift
    BeacondClient/Output/TerminalText.swift"
REMOTE_FILES="$JSON_FILES BeacondCore/Remote/VenueStateFields.swift BeacondCore/Remote/RemoteStateDocument.swift"
DBUS_FILES="BeacondCore/Scanner/BlueZ/DBusValue.swift BeacondCore/Scanner/BlueZ/DBusMessageReader.swift
    BeacondCore/Scanner/BlueZ/DBusConnection.swift BeacondCore/Scanner/BlueZ/BlueZDeviceTracker.swift"
JSON_FILES=$(echo $JSON_FILES)
REMOTE_FILES=$(echo $REMOTE_FILES)
DBUS_FILES=$(echo $DBUS_FILES)
CORE_TARGETS="
remote-state|Core/FuzzRemoteState.swift|$REMOTE_FILES|65536
socket-requests|Core/FuzzSocketRequests.swift|BeacondCore/SocketServer/LineFrameDecoder.swift BeacondClient/Protocol/ClientRequest.swift $JSON_FILES|8192
config-yaml|Core/FuzzConfigYAML.swift|*|16384
dbus-values|Core/FuzzDBusValues.swift|$DBUS_FILES|8192
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

# -package-name: as SwiftPM builds them, so `package` declarations reach across the modules.
SAN=(-sanitize=fuzzer,address -O -parse-as-library -enable-testing -use-ld=lld)

build_pure_modules() {
    mkdir -p "$OUT/modules" "$OUT/obj" "$OUT/bin"
    local ble=(Sources/BLEPayload/*.swift Sources/BLEPayload/Capture/*.swift)
    if stale "$OUT/obj/BLEPayload.o" "${ble[@]}"; then
        echo "fuzz build: BLEPayload" >&2
        "$SWIFTC" "${SAN[@]}" -wmo -module-name BLEPayload -package-name beacond \
            -emit-module -emit-module-path "$OUT/modules/BLEPayload.swiftmodule" \
            -c "${ble[@]}" -o "$OUT/obj/BLEPayload.o"
        touch "$OUT/obj/BLEPayload.o"  # swiftc keeps the old file (and time) when the output is unchanged
    fi
    local circuit=(Sources/CircuitState/*.swift)
    if stale "$OUT/obj/CircuitState.o" "${circuit[@]}" "$OUT/obj/BLEPayload.o"; then
        echo "fuzz build: CircuitState" >&2
        "$SWIFTC" "${SAN[@]}" -wmo -module-name CircuitState -package-name beacond -I "$OUT/modules" \
            -emit-module -emit-module-path "$OUT/modules/CircuitState.swiftmodule" \
            -c "${circuit[@]}" -o "$OUT/obj/CircuitState.o"
        touch "$OUT/obj/CircuitState.o"
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

# NIOCore for the targets that need it: the debug build's modules and objects (not sanitized,
# so not instrumented: the fuzzing covers beacond's code, NIO is only its ByteBuffer).
NIO_BUILD=.build/debug
NIO_FLAGS=()
nio_flags() {
    [ ${#NIO_FLAGS[@]} -gt 0 ] && return
    [ -d "$NIO_BUILD/NIOCore.build" ] || swift build --target NIOCore >&2
    NIO_FLAGS=(-I "$NIO_BUILD/Modules")
    local map dir object
    local shims=.build/checkouts/swift-atomics/Sources/_AtomicsShims/include/module.modulemap
    for map in "$NIO_BUILD"/*.build/module.modulemap "$shims"; do NIO_FLAGS+=(-Xcc "-fmodule-map-file=$map"); done
    for dir in NIOCore _NIODataStructures _NIOBase64 NIOConcurrencyHelpers Atomics _AtomicsShims CNIOAtomics \
        DequeModule InternalCollectionsUtilities ContainersPreview \
        CNIOLinux CNIODarwin CNIOWindows CNIOWASI; do
        while IFS= read -r object; do
            NIO_FLAGS+=("$object")
        done < <(find "$NIO_BUILD/$dir.build" -name "*.o" 2>/dev/null)
    done
}

# Every dependency of BeacondCore from the debug build: module maps and objects (not ours, not the
# tests', tools' or examples' with their own `main`).
ALL_FLAGS=()
all_flags() {
    [ -d "$NIO_BUILD/BeacondCore.build" ] || swift build --target BeacondCore >&2
    ALL_FLAGS=(-I "$NIO_BUILD/Modules" -Onone -suppress-warnings)
    local map dir
    for map in "$NIO_BUILD"/*.build/module.modulemap \
        $(find .build/checkouts -path '*/Sources/*' -name module.modulemap -not -path '*Tests*'); do
        ALL_FLAGS+=(-Xcc "-fmodule-map-file=$map")
    done
    for dir in "$NIO_BUILD"/*.build; do
        case "$(basename "$dir" .build)" in
            BeacondCore | BLEPayload | CircuitState | beacond* | Beacond* | Benchmark* | *Test* | *-tool | generate_* \
                | ArgumentParser* | NIOSSLHTTP1Client | NIOTLSServer | PropertyBased | InMemory* | *Testing*)
                continue ;;
        esac
        while IFS= read -r object; do ALL_FLAGS+=("$object"); done < <(find "$dir" -name '*.o')
    done
}

build_core_target() {
    local name=$1 source=Fuzz/$2 files=() file
    if [ "$3" = "*" ]; then
        # One module: the re-export of BeacondClient is left out, its files are in.
        while IFS= read -r file; do files+=("$file"); done < <(
            find Sources/BeacondClient Sources/BeacondCore -name '*.swift' ! -name BeacondClientExport.swift | sort)
    else
        for file in $3; do files+=("Sources/$file"); done
    fi
    local objects=("$OUT/obj/BLEPayload.o" "$OUT/obj/CircuitState.o")
    if stale "$OUT/bin/$name" "$source" Fuzz/Support/*.swift "${files[@]}" "${objects[@]}"; then
        echo "fuzz build: $name" >&2
        local dbus=() nio=()
        # BeacondCore's system libraries (Package.swift's systemLibrary targets): CBlueZ, CLinux and CMosquitto.
        for flag in $(pkg-config --cflags dbus-1 libmosquitto); do dbus+=(-Xcc "$flag"); done
        if [ "$3" = "*" ]; then
            all_flags
            nio=("${ALL_FLAGS[@]}")
        elif grep -q '^import NIOCore' "${files[@]}"; then
            nio_flags
            nio=("${NIO_FLAGS[@]}")
        fi
        "$SWIFTC" "${SAN[@]}" -I "$OUT/modules" -I Sources/CBlueZ -I Sources/CLinux -I Sources/CMosquitto "${dbus[@]}" \
            -package-name beacond \
            -module-name "Fuzz_${name//-/_}" Fuzz/Support/*.swift "${files[@]}" "$source" "${objects[@]}" \
            "${nio[@]}" -ldbus-1 -lbluetooth -lmosquitto -o "$OUT/bin/$name"
        rm -rf "$OUT/seeds/$name"
    fi
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
if [ "$mode" != pure ]; then
    [ "$mode" = core ] && build_pure_modules
    while IFS='|' read -r name source files _; do
        [ -n "$name" ] && wanted "$name" && build_core_target "$name" "$source" "$files"
    done <<< "$CORE_TARGETS"
fi
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
    while IFS='|' read -r name _ _ max_len; do
        [ -n "$name" ] && wanted "$name" && run_target "$name" "$OUT/bin/$name" "$max_len"
    done <<< "$CORE_TARGETS"
fi
exit "$failed"
