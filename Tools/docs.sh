#!/usr/bin/env bash
# Builds the DocC catalog of every module that has one, with warnings (broken links, unknown
# symbols) as errors. The symbol graphs come from `swift package dump-symbol-graph`; `docc` is the
# toolchain's. Output goes to .build/docs/<Module>.doccarchive.
set -euo pipefail
cd "$(dirname "$0")/.."
swift package dump-symbol-graph >/dev/null 2>&1
graphs=$(find .build -maxdepth 2 -type d -name symbolgraph | head -1)
status=0
mkdir -p .build/docs
for catalog in Sources/*/*.docc; do
    module=$(basename "$(dirname "$catalog")")
    module_graphs=.build/symbol-graphs-$module
    rm -rf "$module_graphs" && mkdir -p "$module_graphs"
    cp "$graphs/$module".symbols.json "$module_graphs/" 2>/dev/null || true
    cp "$graphs/$module"@*.symbols.json "$module_graphs/" 2>/dev/null || true
    if ! docc convert "$catalog" --additional-symbol-graph-dir "$module_graphs" --output-dir ".build/docs/$module.doccarchive" \
        --fallback-display-name "$module" --fallback-bundle-identifier "photoledger.$module" --warnings-as-errors >/tmp/docc-$module.log 2>&1; then
        echo "DocC catalog of $module has problems:" >&2
        grep -E "warning|error" /tmp/docc-$module.log >&2 || cat /tmp/docc-$module.log >&2
        status=1
    else
        echo "DocC catalog of $module: no warnings"
    fi
done
exit $status
