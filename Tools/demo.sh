#!/usr/bin/env bash
# Runs PhotoLedger's main job: the demo, in a folder it creates and names.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Tools/install-dependencies.sh
swift build -c release --product photoledger-demo >&2
exec .build/release/photoledger-demo "$@"
