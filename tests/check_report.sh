#!/usr/bin/env bash
# tests/check_report.sh — the --report page in a real browser.
#
# Generates a report for a short run on models/tiny, opens it in headless
# Chromium from disk (no network) and checks that the page's script ran to
# the end without a JavaScript error: the script writes "REPORT_OK ..." into
# the page, and window.onerror writes "REPORT_ERROR ..." instead. To show
# that this check can fail, a copy of the page with a planted error must be
# caught. Last, a screenshot goes to build/report.png (1280x2400) for a
# person to look at.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v chromium >/dev/null || { echo "chromium is not installed (make deps)"; exit 1; }
[ -f models/tiny/model.safetensors ] || { echo "models/tiny is missing (make models)"; exit 1; }
[ -x ./run ] || { echo "./run is not built (make)"; exit 1; }

out=build/report_check
mkdir -p "$out"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
browser() {
    timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
        --disable-component-update --disable-sync --user-data-dir="$profile" --enable-logging=stderr --log-level=0 "$@"
}
# The status line the page's script left in the DOM, and any uncaught error
# Chromium logged from the page's console.
page_status() {
    browser --dump-dom "file://$PWD/$1" >"$1.dom" 2>"$1.log" || true
    grep -o 'id="report-status"[^>]*>[^<]*' "$1.dom" | sed 's/.*>//' || true
    grep -i 'uncaught' "$1.log" | head -3 || true
}

echo "== generating the report"
./run models/tiny "Why is the sky blue?" -n 24 --report "$out/report.html" --trace-json "$out/trace.json" \
    >"$out/stdout.txt" 2>"$out/stderr.txt" || { cat "$out/stderr.txt"; exit 1; }
ls -l "$out/report.html"

echo "== opening it in headless Chromium"
status=$(page_status "$out/report.html")
echo "page says: $status"
case "$status" in
    REPORT_OK*) ;;
    *) echo "FAIL: the page's script did not finish cleanly"; exit 1 ;;
esac
if echo "$status" | grep -qi uncaught; then echo "FAIL: uncaught JavaScript error"; exit 1; fi

echo "== the check catches a planted JavaScript error"
sed 's|</body>|<script>null.planted();</script></body>|' "$out/report.html" >"$out/planted.html"
planted=$(page_status "$out/planted.html")
echo "planted page says: $planted"
case "$planted" in
    REPORT_ERROR*) ;;
    *) echo "FAIL: a page with a JavaScript error was not caught"; exit 1 ;;
esac

echo "== screenshot"
rm -f build/report.png
browser --hide-scrollbars --screenshot=build/report.png --window-size=1280,2400 "file://$PWD/$out/report.html" \
    >/dev/null 2>"$out/screenshot.log" || true
[ -s build/report.png ] || { echo "FAIL: no screenshot"; exit 1; }
# A PNG's width and height are big-endian 32-bit numbers at bytes 16-23.
size=$(od -An -tu1 -j16 -N8 build/report.png | awk '{print $1*16777216+$2*65536+$3*256+$4 "x" $5*16777216+$6*65536+$7*256+$8}')
bytes=$(stat -c %s build/report.png)
echo "build/report.png: $size, $bytes bytes"
[ "$size" = "1280x2400" ] || { echo "FAIL: screenshot is $size, not 1280x2400"; exit 1; }
[ "$bytes" -gt 60000 ] || { echo "FAIL: screenshot is suspiciously small (blank page?)"; exit 1; }
echo "OK"
