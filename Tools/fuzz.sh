#!/usr/bin/env bash
# Builds the fuzz targets of Tools/Fuzz with libFuzzer and AddressSanitizer, and runs them.
# See usage() below, or run `bash Tools/fuzz.sh --help`.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(payloads canonical pages json compression media)
# The project modules each target links, in build order.
declare -A TARGET_MODULES=(
    [payloads]="LedgerCore LedgerStore PhotoMedia PhotoLedger"
    [canonical]="LedgerCore"
    [pages]="LedgerCore SyncProtocol"
    [json]="LedgerCore SyncProtocol"
    [compression]="LedgerCore SyncProtocol"
    [media]="LedgerCore PhotoMedia"
)
# The longest input each target is given, in bytes.
declare -A TARGET_MAX_LEN=([payloads]=4096 [canonical]=4096 [pages]=65536 [json]=16384 [compression]=65536 [media]=65536)
# The modules each module imports, as Package.swift declares them.
declare -A MODULE_DEPENDENCIES=(
    [LedgerCore]="" [SyncProtocol]="LedgerCore" [LedgerStore]="LedgerCore" [PhotoMedia]="LedgerCore"
    [PhotoLedger]="LedgerCore LedgerStore PhotoMedia"
)
MODULE_ORDER=(LedgerCore SyncProtocol LedgerStore PhotoMedia PhotoLedger)
LIBRARIES=(-lcrypto -lz -lzstd -lexif -lsqlite3)

BUILD=.build/fuzz
# Crashes are reported by libFuzzer and AddressSanitizer, not by Swift's backtracer.
export SWIFT_BACKTRACE=enable=no
SWIFT_FLAGS=(-O -g -sanitize=fuzzer,address -parse-as-library -package-name photoledger -swift-version 6 -warnings-as-errors)
INCLUDES=(-I Sources/CCrypto -I Sources/CZlib -I Sources/CZstd -I Sources/CExif -I Sources/CSQLite -I "$BUILD/CFileSync" -I "$BUILD/modules")
# Per input: at most 10 s, 2 GB in all and 256 MB in one allocation (an input of at most 64 KB
# that needs more is a bug).
FUZZ_FLAGS=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=256 -use_value_profile=1 -print_final_stats=1)

usage() {
    cat <<EOF
OVERVIEW: Build and run the fuzz targets: everything a peer can send, through the code that
decodes it (Tools/Fuzz).

USAGE: bash Tools/fuzz.sh [--seconds N | --runs N] [--summary FILE] [--build-only] [TARGET ...]

ARGUMENTS:
  TARGET                  The targets to build and run (default: all of them):
                            payloads     event payloads: the verdict of every type and version,
                                         the in-memory fold, position keys among folded members
                            canonical    canonical event bytes, formats 1 and 2
                            pages        binary pull pages (EventPage)
                            json         every JSON message of the protocol, and JSONValue
                            compression  gzip and zstd inflation with a limit
                            media        the hand-written media parsers and the EXIF reader

OPTIONS:
  --seconds N             Run each target for N seconds (default: 30).
  --runs N                Run each target for N executions instead.
  --summary FILE          Write the final statistics to FILE (default: $BUILD/summary.txt).
  --build-only            Build the targets and write their seed corpora; run nothing.
  -h, --help              Show this help.

Modules are compiled with swiftc -sanitize=fuzzer,address into $BUILD (again only when a
source changed). Each run writes the target's seeds from the project's own encoders into
$BUILD/seeds/TARGET, grows its corpus in $BUILD/corpus/TARGET (kept between runs), writes
crashing inputs to $BUILD/crashes/TARGET, its log to $BUILD/logs/TARGET.log, and the final
statistics of every target to the summary: executions, executions per second, corpus size,
inputs added, peak memory and crashes.

Exit status: 0 when no target crashed, 1 when one did, 64 for a usage error.
EOF
}

usage_error() {
    echo "Error: $1" >&2
    echo "Usage: bash Tools/fuzz.sh [--seconds N | --runs N] [--summary FILE] [--build-only] [TARGET ...]" >&2
    echo "  See 'bash Tools/fuzz.sh --help' for more information." >&2
    exit 64
}

seconds=30
runs=""
summary="$BUILD/summary.txt"
build_only=false
selected=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --seconds | --runs)
            [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage_error "$1 takes a positive integer"
            if [[ "$1" == --seconds ]]; then seconds="$2"; else runs="$2"; fi
            shift 2 ;;
        --summary)
            [[ $# -ge 2 && -n "$2" ]] || usage_error "--summary takes a file"
            summary="$2"; shift 2 ;;
        --build-only) build_only=true; shift ;;
        -h | --help) usage; exit 0 ;;
        -*) usage_error "unknown option '$1'" ;;
        *)
            [[ -n "${TARGET_MODULES[$1]:-}" ]] || usage_error "unknown target '$1' (targets: ${TARGETS[*]})"
            selected+=("$1"); shift ;;
    esac
done
[[ ${#selected[@]} -gt 0 ]] || selected=("${TARGETS[@]}")

mkdir -p "$BUILD/modules" "$BUILD/bin" "$BUILD/CFileSync" "$BUILD/generated"

# A fingerprint of the compiler, the flags and the given files: a build step runs again only
# when it changes.
fingerprint() {
    { swiftc --version 2>&1; echo "${SWIFT_FLAGS[*]} ${INCLUDES[*]}"; cat "$@"; } | sha256sum | cut -d' ' -f1
}

# Runs a build step unless its stamp holds the same fingerprint (of its inputs, and of the
# command itself).
#   step NAME FINGERPRINT COMMAND...
step() {
    local name="$1" print
    print="$2 $(declare -f "$3" 2>/dev/null | sha256sum | cut -c1-16) $(printf '%s ' "${@:3}" | sha256sum | cut -c1-16)"
    shift 2
    if [[ -f "$BUILD/$name.stamp" && "$(cat "$BUILD/$name.stamp")" == "$print" ]]; then return 0; fi
    echo "Compiling $name"
    rm -f "$BUILD/$name.stamp"
    "$@"
    echo "$print" > "$BUILD/$name.stamp"
}

# LedgerStore's migrations, embedded as the EmbedMigrations plugin does in a SwiftPM build.
embed_migrations() {
    swiftc -O -o "$BUILD/embed-migrations" Tools/embed-migrations/main.swift
    "$BUILD/embed-migrations" Migrations "$BUILD/generated/EmbeddedMigrations.swift"
}

# CFileSync is a C target: SwiftPM makes its module map; here it is written by hand.
compile_file_sync() {
    printf 'module CFileSync {\n    header "%s"\n    export *\n}\n' "$PWD/Sources/CFileSync/include/CFileSync.h" > "$BUILD/CFileSync/module.modulemap"
    clang -O1 -g -fsanitize=fuzzer-no-link,address -I Sources/CFileSync/include -c Sources/CFileSync/file_sync.c -o "$BUILD/modules/CFileSync.o"
}

compile_module() {
    local module="$1"
    shift
    swiftc "${SWIFT_FLAGS[@]}" "${INCLUDES[@]}" -wmo -module-name "$module" -emit-module -emit-module-path "$BUILD/modules/$module.swiftmodule" \
        -emit-object -o "$BUILD/modules/$module.o" "$@"
}

# The Swift sources of a module, with what it needs generated first.
module_sources() {
    local module="$1"
    find "Sources/$module" -name '*.swift' | sort
    case "$module" in
        LedgerStore) echo "$BUILD/generated/EmbeddedMigrations.swift" ;;
    esac
}

build_module() {
    local module="$1" dependency stamps=()
    case "$module" in
        LedgerStore) step embed-migrations "$(fingerprint Tools/embed-migrations/main.swift $(find Migrations -name '*.sql' | sort))" embed_migrations ;;
        PhotoMedia) step CFileSync "$(fingerprint Sources/CFileSync/file_sync.c Sources/CFileSync/include/CFileSync.h)" compile_file_sync ;;
    esac
    for dependency in ${MODULE_DEPENDENCIES[$module]}; do stamps+=("$BUILD/$dependency.stamp"); done
    local sources
    mapfile -t sources < <(module_sources "$module")
    step "$module" "$(fingerprint "${sources[@]}" "${stamps[@]}")" compile_module "$module" "${sources[@]}"
}

build_target() {
    local target="$1" module objects=() stamps=()
    for module in ${TARGET_MODULES[$target]}; do
        objects+=("$BUILD/modules/$module.o")
        stamps+=("$BUILD/$module.stamp")
        [[ "$module" == PhotoMedia ]] && objects+=("$BUILD/modules/CFileSync.o")
    done
    local sources=(Tools/Fuzz/Common/*.swift "Tools/Fuzz/$target.swift")
    step "target-$target" "$(fingerprint "${sources[@]}" "${stamps[@]}")" \
        swiftc "${SWIFT_FLAGS[@]}" "${INCLUDES[@]}" -module-name "fuzz_$target" "${sources[@]}" "${objects[@]}" "${LIBRARIES[@]}" \
        -use-ld=lld -o "$BUILD/bin/$target"
}

needed=" "
for target in "${selected[@]}"; do needed+="${TARGET_MODULES[$target]} "; done
for module in "${MODULE_ORDER[@]}"; do
    [[ "$needed" == *" $module "* ]] && build_module "$module"
done
for target in "${selected[@]}"; do build_target "$target"; done

for target in "${selected[@]}"; do
    rm -rf "$BUILD/seeds/$target"
    if ! PHOTOLEDGER_FUZZ_WRITE_SEEDS="$BUILD/seeds/$target" "$BUILD/bin/$target" > "$BUILD/seeds/$target.log" 2>&1; then
        echo "Error: the $target target could not write its seeds:" >&2
        grep -v '^INFO:' "$BUILD/seeds/$target.log" >&2
        exit 1
    fi
done
if $build_only; then
    echo "Built ${selected[*]} in $BUILD/bin; seeds in $BUILD/seeds"
    exit 0
fi

# The value of `stat::NAME:` in a libFuzzer log, or "-".
stat() { sed -n "s/^stat::$2: *//p" "$1" | tail -1 | grep . || echo -; }

mkdir -p "$BUILD/logs" "$(dirname "$summary")"
limit=$([[ -n "$runs" ]] && echo "-runs=$runs" || echo "-max_total_time=$seconds")
{
    echo "Fuzzing $(date -u +%Y-%m-%dT%H:%M:%SZ), $([[ -n "$runs" ]] && echo "$runs runs" || echo "$seconds s") per target"
    printf '%-12s %-8s %12s %8s %8s %8s %8s  %s\n' target result executions exec/s corpus new rss_mb crashes
} > "$summary"
failed=0
for target in "${selected[@]}"; do
    corpus="$BUILD/corpus/$target" crashes="$BUILD/crashes/$target" log="$BUILD/logs/$target.log"
    mkdir -p "$corpus" "$crashes"
    dictionary=()
    [[ -f "Tools/Fuzz/$target.dict" ]] && dictionary=("-dict=Tools/Fuzz/$target.dict")
    before=$(ls "$crashes" | wc -l)
    echo "Fuzzing $target ($([[ -n "$runs" ]] && echo "$runs runs" || echo "$seconds s"))"
    status=0
    "$BUILD/bin/$target" "${FUZZ_FLAGS[@]}" "${dictionary[@]}" -max_len="${TARGET_MAX_LEN[$target]}" "$limit" \
        -artifact_prefix="$crashes/" "$corpus" "$BUILD/seeds/$target" > "$log" 2>&1 || status=$?
    found=$(($(ls "$crashes" | wc -l) - before))
    result=ok
    if [[ $status -ne 0 || $found -gt 0 ]]; then
        result=CRASH
        failed=1
        found=$((found > 0 ? found : 1))
    fi
    printf '%-12s %-8s %12s %8s %8s %8s %8s  %s\n' "$target" "$result" "$(stat "$log" number_of_executed_units)" \
        "$(stat "$log" average_exec_per_sec)" "$(ls "$corpus" | wc -l)" "$(stat "$log" new_units_added)" "$(stat "$log" peak_rss_mb)" \
        "$found" >> "$summary"
    if [[ $result == CRASH ]]; then
        echo "  $target crashed (exit status $status); the log is $log, the input in $crashes:" >&2
        grep -m 12 -E 'ERROR|Fatal error|fuzz check failed|SUMMARY|Test unit written|deadly signal' "$log" | sed 's/^/    /' >&2 || true
    fi
done
echo
cat "$summary"
exit $failed
