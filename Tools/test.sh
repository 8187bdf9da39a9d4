#!/usr/bin/env bash
# Runs the whole test suite with warnings treated as errors.
#
# Tests run one at a time (--no-parallel): several suites start servers, kill processes and assert
# time limits (transport timeouts), and on a 2-core machine parallel suites starve each other's
# timing. The multi-replica sync simulation runs PHOTOLEDGER_SIMULATION_SCHEDULES schedules
# (default 1000).
#
# Then, when CI=true or PHOTOLEDGER_FUZZ_SECONDS=N is set, every fuzz target runs for N seconds
# (default 25) with Tools/fuzz.sh, and a crash fails the run; otherwise fuzzing is skipped, and
# said so.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Tools/install-dependencies.sh
swift build --build-tests -Xswiftc -warnings-as-errors --explicit-target-dependency-import-check error
swift test --skip-build --no-parallel "$@"
if [[ "${CI:-}" == true || -n "${PHOTOLEDGER_FUZZ_SECONDS:-}" ]]; then
    bash Tools/fuzz.sh --seconds "${PHOTOLEDGER_FUZZ_SECONDS:-25}"
else
    echo "Fuzzing skipped: set CI=true or PHOTOLEDGER_FUZZ_SECONDS=N to run every fuzz target for N seconds (Tools/fuzz.sh)."
fi
