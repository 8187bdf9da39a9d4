#!/usr/bin/env bash
# Runs the test suite with warnings treated as errors, every import a declared dependency, and
# the code formatted as .swift-format says.
#
# The default local run is short (about 200 s of CPU in all; the goal: three minutes or less on two
# idle cores): the randomized and exhaustive tests run a few cases each, and what needs a
# service, a browser or another language's toolchain is skipped, each saying so. With CI=true
# (as .ci/run sets it) everything runs; PHOTOLEDGER_FULL_TESTS=1 asks for all of it but the
# services.
#
# - Lint: by default only the Swift files changed since the branch left main (committed or not,
#   new files included); with CI=true or PHOTOLEDGER_FULL_LINT=1 every file.
# - Randomized and exhaustive tests: their full amounts (the multi-replica simulation's thousand
#   schedules, the crash-safety writer's kills) with CI=true or PHOTOLEDGER_FULL_TESTS=1.
#   PHOTOLEDGER_SIMULATION_SCHEDULES sets the simulation's count alone.
# - The web view's tests in a headless Chromium (chromedriver, installed here when they run): with
#   CI=true, PHOTOLEDGER_FULL_TESTS=1 or PHOTOLEDGER_BROWSER_TESTS=1. They say they were skipped
#   otherwise, and also when the browser could not be installed.
# - The C, C++, Lua and Python programs over libphotoledger: with CI=true, PHOTOLEDGER_FULL_TESTS=1
#   or PHOTOLEDGER_HOST_LANGUAGE_TESTS=1.
# - The server's PostgreSQL and S3 tests get a throwaway PostgreSQL cluster and a local
#   S3-compatible server (Tools/test-services.sh), stopped at the end, also on failure: with
#   CI=true, or when PHOTOLEDGER_TEST_SERVICES=1. Otherwise those tests say they were skipped.
# - The DocC catalogs are built with warnings as errors with CI=true or PHOTOLEDGER_FULL_TESTS=1.
# - The fuzzers (Tools/fuzz.sh): with CI=true, PHOTOLEDGER_FULL_TESTS=1 or PHOTOLEDGER_FUZZ_SECONDS=N
#   every fuzz target is built and run for N seconds (default 15), and a crash fails the run.
#
# The tests run in parallel, in three test processes at once (each a group of test targets of
# about the same CPU time; swift-testing runs each process's tests in parallel too): many tests
# wait on child processes (the tools, servers, compilers), which one process's thread pool
# overlaps only in part. Every test has its own temporary files, ports, databases and buckets,
# and waits on the event it expects (a completion, a log line, a port announced), with only a
# generous bound as a safety net, never on the time. The transport's timeout tests compare
# elapsed time with a timeout: they run alone, after the others, so nothing else delays them.
# Arguments (e.g. --filter NAME) are passed to one `swift test --parallel` run instead.
set -euo pipefail
cd "$(dirname "$0")/.."
full=false
if [ "${CI:-}" = "true" ] || [ "${PHOTOLEDGER_FULL_TESTS:-}" = "1" ]; then full=true; fi
browser=false
if $full || [ "${PHOTOLEDGER_BROWSER_TESTS:-}" = "1" ]; then browser=true; fi
host_languages=false
if $full || [ "${PHOTOLEDGER_HOST_LANGUAGE_TESTS:-}" = "1" ]; then host_languages=true; fi

# Background test processes still running when the script ends (a failure, Ctrl-C) are stopped.
test_processes=()
stop_test_processes() {
    local pid
    for pid in "${test_processes[@]}"; do kill "$pid" 2>/dev/null || true; done
}
services_default=0
if [ "${CI:-}" = "true" ]; then services_default=1; fi
if [ "${PHOTOLEDGER_TEST_SERVICES:-$services_default}" = "0" ]; then
    echo "Skipped: the PostgreSQL and S3 services and their tests (they run when CI=true or PHOTOLEDGER_TEST_SERVICES=1)."
    if $browser; then bash Tools/install-dependencies.sh --browser; else bash Tools/install-dependencies.sh; fi
    trap stop_test_processes EXIT
else
    test_services_python="$(bash Tools/install-dependencies.sh --test-services | tail -n 1)"
    source Tools/test-services.sh
    trap 'stop_test_processes; stop_test_services' EXIT
    start_test_services
fi
started=$SECONDS
$browser || echo "Skipped: the web view's browser tests (they run when CI=true, PHOTOLEDGER_FULL_TESTS=1 or PHOTOLEDGER_BROWSER_TESTS=1)."
$host_languages || echo "Skipped: the C, C++, Lua and Python programs over libphotoledger (they run when CI=true, PHOTOLEDGER_FULL_TESTS=1 or PHOTOLEDGER_HOST_LANGUAGE_TESTS=1)."

# Lint. The changed files are those that differ from where the branch left main (or from HEAD
# when there is no main), in the working tree, and the new files git does not ignore.
if [ "${CI:-}" = "true" ] || [ "${PHOTOLEDGER_FULL_LINT:-}" = "1" ]; then
    swift format lint --strict --parallel --recursive Sources Tools Tests
else
    base="$(git merge-base HEAD main 2>/dev/null || git merge-base HEAD origin/main 2>/dev/null || git rev-parse HEAD)"
    changed=()
    while IFS= read -r file; do
        if [ -f "$file" ]; then changed+=("$file"); fi
    done < <({
        git diff --name-only "$base" -- 'Sources/*.swift' 'Tools/*.swift' 'Tests/*.swift'
        git ls-files --others --exclude-standard -- 'Sources/*.swift' 'Tools/*.swift' 'Tests/*.swift'
    } | sort -u)
    if [ ${#changed[@]} -gt 0 ]; then swift format lint --strict --parallel "${changed[@]}"; fi
    echo "Linted the ${#changed[@]} Swift files changed since main (CI=true or PHOTOLEDGER_FULL_LINT=1 lints every file)."
fi
linted=$SECONDS

swift build --build-tests -Xswiftc -warnings-as-errors --explicit-target-dependency-import-check error
built=$SECONDS

alone='CurlTransportTests'
if [ $# -gt 0 ]; then
    swift test --skip-build --parallel "$@"
else
    # The package's tests are swift-testing tests, run from SwiftPM's test executable directly (as
    # `swift test` does), one process per group; the last group is every target the others do
    # not name, so a new test target runs too.
    tests="$(swift build --show-bin-path)/PhotoLedgerPackageTests.xctest"
    groups=(
        'ToolTests'
        'PhotoLedgerTests|PhotoMediaTests|LedgerStoreTests|SyncProtocolTests|CommandLineParsingTests'
    )
    named="$(
        IFS='|'
        echo "${groups[*]}"
    )"
    names=(tools library rest)
    filters=()
    for group in "${groups[@]}"; do filters+=("--filter ^($group)\\."); done
    filters+=("--skip ^($named)\\.")
    # Each group's output is also kept, so that a failure's own lines are printed again at the end,
    # where a log's tail shows them (the simulation prints a line for each of its schedules).
    group_logs="$(mktemp -d)"
    for index in "${!filters[@]}"; do
        (
            set -o pipefail
            # shellcheck disable=SC2086 # the filter is an option and its pattern
            "$tests" --testing-library swift-testing --parallel ${filters[$index]} --skip "$alone" 2>&1 |
                sed -u "s/^/[${names[$index]}] /" | tee "$group_logs/${names[$index]}.log"
        ) &
        test_processes+=($!)
    done
    failed_groups=()
    for index in "${!test_processes[@]}"; do
        if ! wait "${test_processes[$index]}"; then
            echo "error: the ${names[$index]} tests failed (their lines start with [${names[$index]}])" >&2
            failed_groups+=("${names[$index]}")
        fi
    done
    test_processes=()
    if [ ${#failed_groups[@]} -gt 0 ]; then
        echo "The failures' own lines (an issue recorded, a test or suite failed, a crash):" >&2
        grep -h -A 6 -e 'recorded an issue' -e 'failed after' -e 'Fatal error' -e 'exited with' \
            "$group_logs"/*.log | grep -v ' started\.$' | head -n 200 >&2 || true
        for name in "${failed_groups[@]}"; do
            echo "The last lines of the $name tests:" >&2
            tail -n 8 "$group_logs/$name.log" >&2
        done
    fi
    rm -rf "$group_logs"
    [ ${#failed_groups[@]} -eq 0 ] || exit 1
    "$tests" --testing-library swift-testing --no-parallel --filter "$alone"
fi
tested=$SECONDS
echo "Dependencies and services $started s, lint $((linted - started)) s, build $((built - linted)) s, tests $((tested - built)) s."
if $full; then
    bash Tools/docs.sh
else
    echo "Skipped: the DocC catalogs (they are built when CI=true or PHOTOLEDGER_FULL_TESTS=1)."
fi
if $full || [ -n "${PHOTOLEDGER_FUZZ_SECONDS:-}" ]; then
    bash Tools/fuzz.sh --seconds "${PHOTOLEDGER_FUZZ_SECONDS:-15}"
else
    echo "Skipped: the fuzzers (every target runs briefly when CI=true, PHOTOLEDGER_FULL_TESTS=1 or PHOTOLEDGER_FUZZ_SECONDS=N)."
fi
