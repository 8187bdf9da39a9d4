#!/usr/bin/env bash
# Runs the whole test suite with warnings treated as errors.
#
# Tests run one at a time (--no-parallel): several suites start servers, kill processes and assert
# time limits (transport timeouts), and on a 2-core machine parallel suites starve each other's
# timing. The multi-replica sync simulation runs PHOTOLEDGER_SIMULATION_SCHEDULES schedules
# (default 1000).
set -euo pipefail
cd "$(dirname "$0")/.."
bash Tools/install-dependencies.sh
swift build --build-tests -Xswiftc -warnings-as-errors --explicit-target-dependency-import-check error
swift test --skip-build --no-parallel "$@"
