#!/usr/bin/env bash
# Builds the fuzz targets of Tools/Fuzz with libFuzzer and AddressSanitizer, and runs them.
# See usage() below, or run `bash Tools/fuzz.sh --help`.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(payloads canonical pages json compression headers keys metadata media)
# The longest input each target is given, in bytes.
declare -A TARGET_MAX_LEN=([payloads]=4096 [canonical]=4096 [pages]=65536 [json]=16384 [compression]=65536 [headers]=1024 [keys]=4096
    [metadata]=16384 [media]=65536)

BUILD=.build/fuzz
# Crashes are reported by libFuzzer and AddressSanitizer, not by Swift's backtracer. Leaks
# inside system libraries that our code cannot free are listed, with their reasons, in
# Tools/Fuzz/lsan.supp.
export SWIFT_BACKTRACE=enable=no
export LSAN_OPTIONS="suppressions=$PWD/Tools/Fuzz/lsan.supp:print_suppressions=0"
# The fuzz targets exist in the manifest only with PHOTOLEDGER_FUZZ=1 (Package.swift). Swift
# code gets libFuzzer's coverage and AddressSanitizer; our C code (the media shim, the EXIF
# recovery) AddressSanitizer and the coverage libFuzzer follows. lld links: gold fails on the
# sanitizers' objects.
SWIFT_BUILD=(swift build -c release --scratch-path "$BUILD" --sanitize address -Xswiftc -sanitize=fuzzer -Xswiftc -use-ld=lld
    -Xcc -fsanitize=fuzzer-no-link -Xcxx -fsanitize=fuzzer-no-link)
# Per input: at most 10 s, 2 GB in all and 256 MB in one allocation (an input of at most 64 KB
# that needs more is a bug). Media may hold one frame of the largest still PhotoMedia decodes
# (2^28 pixels; a GIF's canvas takes 4 bytes a pixel), and libpng allocates a chunk's declared
# length (up to 2^31 - 1 bytes) before it reads it, touching only what the file holds: 2.1 GB in
# one allocation, 3 GB in all. Decoding such a frame takes time too: a 286-byte GIF whose canvas
# is 10,825 × 23,552 takes 2.6 s in libvips alone (zeroing 1 GB) and as long under the
# sanitizers on an idle machine, over 10 s on a loaded one: media inputs get 30 s.
FUZZ_FLAGS=(-use_value_profile=1 -print_final_stats=1)
declare -A TARGET_MEMORY=([payloads]="2048 256" [canonical]="2048 256" [pages]="2048 256" [json]="2048 256" [compression]="2048 256"
    [headers]="2048 256" [keys]="2048 256" [metadata]="2048 256" [media]="3072 2100")
declare -A TARGET_TIMEOUT=([media]=30)

usage() {
    cat <<EOF
OVERVIEW: Build and run the fuzz targets: everything a peer or a user's file can feed the
code, through the code that reads it (Tools/Fuzz).

USAGE: bash Tools/fuzz.sh [--seconds N | --runs N] [--jobs N] [--summary FILE] [--build-only] [TARGET ...]

ARGUMENTS:
  TARGET                  The targets to build and run (default: all of them):
                            payloads     event payloads: the verdict of every type and version,
                                         the in-memory fold, position keys among folded members
                            canonical    canonical event bytes, formats 1 and 2
                            pages        binary pull pages (EventPage) and pushes (EventBatch)
                            json         every JSON message of the protocol, and JSONValue
                            compression  gzip and zstd inflation with a limit
                            headers      the Range, Content-Range and resumable upload fields
                                         of blob transfers
                            keys         the key store's records: wrapped asset keys, add-only
                                         grants, key rings
                            metadata     the EXIF reader, PNG text profiles, the dates and
                                         locations of media metadata
                            media        MediaInspector over whole files

OPTIONS:
  --seconds N             Run each target for N seconds (default: 30).
  --runs N                Run each target for N executions instead.
  --jobs N                Run N processes of each target at once on its one corpus (each
                          takes the others' finds from the corpus as it goes): N seconds
                          each with --seconds, N executions in all with --runs (default: 1).
  --summary FILE          Write the final statistics to FILE (default: $BUILD/summary.txt).
  --build-only            Build the targets and write their seed corpora; run nothing.
  -h, --help              Show this help.

The targets are SwiftPM executables (fuzz-TARGET) declared only when PHOTOLEDGER_FUZZ=1,
built in release with libFuzzer and AddressSanitizer into $BUILD (incrementally). Each run writes the target's seeds from the project's own encoders into
$BUILD/seeds/TARGET, grows its corpus in $BUILD/corpus/TARGET (kept between runs), writes
crashing inputs to $BUILD/crashes/TARGET, its log to $BUILD/logs/TARGET.log, and the final
statistics of every target to the summary: executions, executions per second, corpus size,
inputs added, peak memory and crashes.

Exit status: 0 when no target crashed, 1 when one did, 64 for a usage error.
EOF
}

usage_error() {
    echo "Error: $1" >&2
    echo "Usage: bash Tools/fuzz.sh [--seconds N | --runs N] [--jobs N] [--summary FILE] [--build-only] [TARGET ...]" >&2
    echo "  See 'bash Tools/fuzz.sh --help' for more information." >&2
    exit 64
}

seconds=30
runs=""
jobs=1
summary="$BUILD/summary.txt"
build_only=false
selected=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --seconds | --runs)
            [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage_error "$1 takes a positive integer"
            if [[ "$1" == --seconds ]]; then seconds="$2"; else runs="$2"; fi
            shift 2 ;;
        --jobs)
            [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage_error "--jobs takes a positive integer"
            jobs="$2"; shift 2 ;;
        --summary)
            [[ $# -ge 2 && -n "$2" ]] || usage_error "--summary takes a file"
            summary="$2"; shift 2 ;;
        --build-only) build_only=true; shift ;;
        -h | --help) usage; exit 0 ;;
        -*) usage_error "unknown option '$1'" ;;
        *)
            [[ -n "${TARGET_MAX_LEN[$1]:-}" ]] || usage_error "unknown target '$1' (targets: ${TARGETS[*]})"
            selected+=("$1"); shift ;;
    esac
done
[[ ${#selected[@]} -gt 0 ]] || selected=("${TARGETS[@]}")

for target in "${selected[@]}"; do
    echo "Building fuzz-$target"
    log="$BUILD/build-$target.log"
    mkdir -p "$BUILD"
    if ! PHOTOLEDGER_FUZZ=1 "${SWIFT_BUILD[@]}" --product "fuzz-$target" > "$log" 2>&1; then
        echo "Error: the $target target did not build; the log is $log:" >&2
        grep -E 'error:' "$log" | head -20 >&2
        exit 1
    fi
done

for target in "${selected[@]}"; do
    rm -rf "$BUILD/seeds/$target" && mkdir -p "$BUILD/seeds"
    if ! PHOTOLEDGER_FUZZ_WRITE_SEEDS="$BUILD/seeds/$target" ASAN_OPTIONS=detect_leaks=0 "$BUILD/release/fuzz-$target" > "$BUILD/seeds/$target.log" 2>&1; then
        echo "Error: the $target target could not write its seeds:" >&2
        grep -v '^INFO:' "$BUILD/seeds/$target.log" >&2
        exit 1
    fi
done
if $build_only; then
    echo "Built ${selected[*]} in $BUILD/release (fuzz-TARGET); seeds in $BUILD/seeds"
    exit 0
fi

# The value of `stat::NAME:` in a libFuzzer log, or "-".
stat() { sed -n "s/^stat::$2: *//p" "$1" | tail -1 | grep . || echo -; }
# The sum (or with `max`, the largest) of `stat::NAME:` over the logs given, or "-" when one lacks it.
stats() {
    local mode=$1 name=$2 total=0 value
    shift 2
    for log in "$@"; do
        value=$(stat "$log" "$name")
        [[ $value =~ ^[0-9]+$ ]] || { echo -; return; }
        if [[ $mode == max ]]; then total=$((value > total ? value : total)); else total=$((total + value)); fi
    done
    echo "$total"
}

# How many inputs libFuzzer wrote to the directory for a crash, a leak, a timeout or a memory
# limit (not its `slow-unit-` files: inputs slower than its report threshold, kept to look at).
artifacts() { find "$1" -maxdepth 1 -type f ! -name 'slow-unit-*' | wc -l; }

mkdir -p "$BUILD/logs" "$(dirname "$summary")"
# With --runs, the executions are shared among the jobs (the first ones take the remainder).
job_limit() {
    if [[ -n "$runs" ]]; then
        echo "-runs=$((runs / jobs + ($1 <= runs % jobs ? 1 : 0)))"
    else
        echo "-max_total_time=$seconds"
    fi
}
{
    echo "Fuzzing $(date -u +%Y-%m-%dT%H:%M:%SZ), $([[ -n "$runs" ]] && echo "$runs runs" || echo "$seconds s") per target$([[ $jobs -eq 1 ]] || echo ", $jobs jobs each")"
    printf '%-12s %-8s %12s %8s %8s %8s %8s  %s\n' target result executions exec/s corpus new rss_mb crashes
} > "$summary"
failed=0
for target in "${selected[@]}"; do
    corpus="$BUILD/corpus/$target" crashes="$BUILD/crashes/$target"
    mkdir -p "$corpus" "$crashes"
    dictionary=()
    [[ -f "Tools/Fuzz/$target.dict" ]] && dictionary=("-dict=Tools/Fuzz/$target.dict")
    before=$(artifacts "$crashes")
    echo "Fuzzing $target ($([[ -n "$runs" ]] && echo "$runs runs" || echo "$seconds s")$([[ $jobs -eq 1 ]] || echo ", $jobs jobs"))"
    read -r rss malloc <<< "${TARGET_MEMORY[$target]}"
    # Job 1 logs to TARGET.log, job N to TARGET.N.log.
    logs=() pids=()
    for job in $(seq 1 "$jobs"); do
        log="$BUILD/logs/$target.log"
        [[ $job -eq 1 ]] || log="$BUILD/logs/$target.$job.log"
        logs+=("$log")
        "$BUILD/release/fuzz-$target" "${FUZZ_FLAGS[@]}" -timeout="${TARGET_TIMEOUT[$target]:-10}" -rss_limit_mb="$rss" -malloc_limit_mb="$malloc" \
            "${dictionary[@]}" -max_len="${TARGET_MAX_LEN[$target]}" \
            "$(job_limit "$job")" -artifact_prefix="$crashes/" "$corpus" "$BUILD/seeds/$target" > "$log" 2>&1 &
        pids+=($!)
    done
    status=0
    for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
    found=$(($(artifacts "$crashes") - before))
    result=ok
    if [[ $status -ne 0 || $found -gt 0 ]]; then
        result=CRASH
        failed=1
        found=$((found > 0 ? found : 1))
    fi
    printf '%-12s %-8s %12s %8s %8s %8s %8s  %s\n' "$target" "$result" "$(stats sum number_of_executed_units "${logs[@]}")" \
        "$(stats sum average_exec_per_sec "${logs[@]}")" "$(ls "$corpus" | wc -l)" "$(stats sum new_units_added "${logs[@]}")" \
        "$(stats max peak_rss_mb "${logs[@]}")" "$found" >> "$summary"
    if [[ $result == CRASH ]]; then
        echo "  $target crashed (exit status $status); the logs are ${logs[*]}, the input in $crashes:" >&2
        grep -h -m 12 -E 'ERROR|Fatal error|fuzz check failed|SUMMARY|Test unit written|deadly signal' "${logs[@]}" | sed 's/^/    /' >&2 || true
    fi
done
echo
cat "$summary"
exit $failed
