#!/usr/bin/env bash
# Runs the whole test suite with warnings treated as errors.
#
# Tests run one at a time (--no-parallel): several suites start servers, kill processes and assert
# time limits (transport timeouts), and on a 2-core machine parallel suites starve each other's
# timing. The multi-replica sync simulation runs PHOTOLEDGER_SIMULATION_SCHEDULES schedules
# (default 1000).
#
# The server's PostgreSQL and S3 tests get a throwaway PostgreSQL cluster and a local
# S3-compatible server (Tools/test-services.sh), stopped at the end, also on failure. Set
# PHOTOLEDGER_TEST_SERVICES=0 to run without them: those tests then say they were skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${PHOTOLEDGER_TEST_SERVICES:-1}" = "0" ]; then
    bash Tools/install-dependencies.sh
else
    test_services_python="$(bash Tools/install-dependencies.sh --test-services | tail -n 1)"
    source Tools/test-services.sh
    trap stop_test_services EXIT
    start_test_services
fi
swift build --build-tests -Xswiftc -warnings-as-errors --explicit-target-dependency-import-check error
swift test --skip-build --no-parallel "$@"
