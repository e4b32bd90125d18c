#!/usr/bin/env bash
# The closing line of `make test`: Swift Testing's runs in LOG summed up. "Test run with N tests"
# counts skipped tests too, so they are taken out of the passed; a failed test has its own line.
# Usage: test-summary.sh LOG
set -euo pipefail
log="$1"
total=$(sed -nE 's/.*Test run with ([0-9]+) tests? .*/\1/p' "$log" | awk '{ n += $1 } END { print n + 0 }')
skipped=$(grep -acE '^➜ Test .* skipped' "$log" || true)
failed=$(grep -aE '^✘ Test .* failed after' "$log" | grep -avc '^✘ Test run with' || true)
passed=$((total - skipped - failed))
echo "tests: $passed passed, $failed failed, $skipped skipped"
if [ "$skipped" -gt 0 ]; then
    echo "skipped tests, by reason:"
    grep -aE '^➜ Test .* skipped' "$log" | sed -E 's/^➜ Test .* skipped(: )?//' | sort | uniq -c | sort -rn
fi
