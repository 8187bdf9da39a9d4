#!/usr/bin/env bash
# Runs the whole test suite with warnings treated as errors, every import a declared dependency,
# and the code formatted as .swift-format says.
#
# By default the randomized and exhaustive tests run a few dozen cases each, so the run stays
# short; with CI=true (as .ci/run sets it) or PHOTOLEDGER_FULL_TESTS=1 they run their full amounts
# (the multi-replica simulation its thousand schedules), the DocC catalogs are built with warnings
# as errors, and the fuzzers run briefly. PHOTOLEDGER_SIMULATION_SCHEDULES sets the simulation's
# count alone.
#
# The transport's timeout tests compare elapsed time with a timeout: they run alone, after the
# others, so nothing else on a small machine delays them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Tools/install-dependencies.sh
swift build --build-tests -Xswiftc -warnings-as-errors --explicit-target-dependency-import-check error
full=false
if [ "${CI:-}" = "true" ] || [ "${PHOTOLEDGER_FULL_TESTS:-}" = "1" ]; then full=true; fi
alone='CurlTransportTests'
swift test --skip-build --no-parallel --skip "$alone" "$@"
swift test --skip-build --no-parallel --filter "$alone" "$@"
if $full; then
    bash Tools/docs.sh
else
    echo "Skipped: the DocC catalogs (they are built when CI=true or PHOTOLEDGER_FULL_TESTS=1)."
fi
