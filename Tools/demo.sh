#!/usr/bin/env bash
# Runs PhotoLedger's main job: a local sync server, two devices that capture photos offline,
# conflicting album edits, sync, converged albums and the audit trail — with the real tools.
# Everything it makes goes into one folder it creates and names (or: demo.sh --folder PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
bash Tools/install-dependencies.sh
for product in photoledger photoledger-server photoledger-demo; do
    swift build -c release --product "$product" >&2
done
exec "$(swift build -c release --show-bin-path)/photoledger-demo" "$@"
