#!/usr/bin/env bash
# `beacond report` at venue scale (issue 33, "Scale"; docs/report.md): a day of a venue's adverts
# (Benchmarks/venue-day.py: 200 beacons in 20 zones heard once a second, a zone's flag changing
# every 5 s, phones, one scanner gap) must give a page under 5 MB that opens in Chromium in under 2 s.
#
#   Benchmarks/report-scale.sh BEACOND [HOURS]       (HOURS: default 24)
#
# Times `BEACOND report` (wall and max RSS, /usr/bin/time), takes the page's size, then opens the
# page in headless Chromium (--dump-dom) and reads the page's own figure: `data-ready-ms` on
# <body>, performance.now() when its script has built the table and drawn the chart (ms since
# navigation start). The reference, in the same run: the bundled example's page
# (`BEACOND example-capture`), opened the same way. Each page is opened 3 times, alternately; the
# medians count. With REPORT_SCALE_REPLAY=1, also times `BEACOND replay --timeline` on the same
# capture (the replay the report is built on) as the reference for the report's time. With
# REPORT_SCALE_KEEP=DIR, the two pages are copied to DIR (to profile them); the capture never is.
# Exits 1 if a goal is missed, 2 on a failure to measure.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
    echo "usage: $0 BEACOND [HOURS]" >&2
    exit 2
fi
BEACOND=$(realpath "$1")
HOURS=${2:-24}
HERE=$(cd "$(dirname "$0")" && pwd)
CHROMIUM=${CHROMIUM:-chromium}
GOAL_BYTES=5000000
GOAL_MS=2000
OPENS=3

WORK=$(mktemp -d "${TMPDIR:-/tmp}/report-scale.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

fail() { echo "report: $*" >&2; exit 2; }
commas() { python3 -c 'import sys; print(f"{int(sys.argv[1]):,}")' "$1"; }
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }

# The page's own figure, ms: opens FILE once in a fresh profile.
open_ms() {
    local page=$1 profile
    profile=$(mktemp -d "$WORK/chromium.XXXXXX")
    timeout 600 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile" \
        --dump-dom "file://$page" 2>/dev/null | grep -o -m1 'data-ready-ms="[0-9]*"' | tr -dc '0-9' || true
    rm -rf "$profile"
}

cd "$WORK"
echo "report: generating a ${HOURS} h venue day…" >&2
python3 "$HERE/venue-day.py" --hours "$HOURS" -o day.btsnoop
"$BEACOND" example-capture ex.btsnoop
"$BEACOND" report ex.btsnoop --tz UTC -o ex.html 2>/dev/null

/usr/bin/time -f '%e %M' -o time.txt "$BEACOND" report day.btsnoop --tz UTC -o day.html 2>report.txt ||
    fail "beacond report failed: $(cat report.txt)"
read -r seconds rss_kib <time.txt
summary=$(grep '^report:' report.txt | tail -1)
echo "$summary" >&2
stretches=$(sed -n 's/.*: \([0-9]*\) stretches in \([0-9]*\) rows.*/\1/p' <<<"$summary")
rows=$(sed -n 's/.* stretches in \([0-9]*\) rows.*/\1/p' <<<"$summary")
bytes=$(stat -c %s day.html)
reports=$(grep -o '[0-9]* advertising reports' day.html | head -1 | cut -d' ' -f1)
[[ -n $stretches && -n $reports ]] || fail "cannot read the report's figures: $summary"
rm -f day.btsnoop  # the pages stay for Chromium; the capture is big

replay_note=""
if [[ ${REPORT_SCALE_REPLAY:-0} == 1 ]]; then
    python3 "$HERE/venue-day.py" --hours "$HOURS" -o day.btsnoop 2>/dev/null
    /usr/bin/time -f '%e' -o replay-time.txt "$BEACOND" replay --timeline day.btsnoop >/dev/null 2>&1
    rm -f day.btsnoop
    replay_s=$(cat replay-time.txt)
    replay_note=$(awk -v r="$seconds" -v p="$replay_s" 'BEGIN { printf " (replay --timeline of it: %.1f s; x%.2f)", p, r / p }')
fi

day_ms=() ex_ms=()
for _ in $(seq "$OPENS"); do
    ex_ms+=("$(open_ms "$WORK/ex.html")")
    day_ms+=("$(open_ms "$WORK/day.html")")
done
for v in "${ex_ms[@]}" "${day_ms[@]}"; do
    [[ -n $v ]] || fail "a page did not set data-ready-ms in Chromium (runs: day ${day_ms[*]}, example ${ex_ms[*]})"
done
if [[ -n ${REPORT_SCALE_KEEP:-} ]]; then
    mkdir -p "$REPORT_SCALE_KEEP" && cp day.html ex.html "$REPORT_SCALE_KEEP/"
fi
day=$(median "${day_ms[@]}")
ex=$(median "${ex_ms[@]}")

ok=0
size_goal="goal < 5 MB"
(( bytes < GOAL_BYTES )) || { size_goal="GOAL MISSED: < 5 MB"; ok=1; }
open_goal="goal < ${GOAL_MS} ms"
(( day < GOAL_MS )) || { open_goal="GOAL MISSED: < ${GOAL_MS} ms"; ok=1; }

awk -v h="$HOURS" -v n="$(commas "$reports")" -v b="$bytes" -v g="$size_goal" -v s="$seconds" \
    -v m="$rss_kib" -v st="$stretches" -v stc="$(commas "$stretches")" -v rows="$rows" -v note="$replay_note" 'BEGIN {
    printf "report: %s h venue day: %s reports -> %s stretches in %s rows -> %.2f MB page, %.0f bytes a stretch (%s); made in %.1f s%s, max RSS %.0f MB\n",
        h, n, stc, rows, b / 1e6, b / st, g, s, note, m / 1024 }'
awk -v d="$day" -v e="$ex" -v g="$open_goal" -v runs="${day_ms[*]}" -v eruns="${ex_ms[*]}" 'BEGIN {
    printf "report: opens in %d ms in Chromium (%s); the 4-minute example'"'"'s page: %d ms (x%.1f) [runs: %s; example %s]\n",
        d, g, e, d / (e > 0 ? e : 1), runs, eruns }'
exit $ok
