#!/usr/bin/env bash
# tests/check_report.sh — the --report page in a real browser.
#
# Generates a report for a short run on models/tiny, opens it in headless
# Chromium from disk (no network) and checks that the page's script ran to
# the end without a JavaScript error: the script writes "REPORT_OK ..." into
# the page, and window.onerror writes "REPORT_ERROR ..." instead. To show
# that this check can fail, a copy of the page with a planted error must be
# caught. Then a 500-token run's page must fit a 1,280-pixel window: the
# token stream wraps, the page never scrolls sideways (a planted wide element
# must be caught). Last, a screenshot goes to build/report.png (1280x2400)
# for a person to look at.
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

echo "== the logit-lens panel: one cell per depth and position, one attribution per position"
# Depths: the embedding and each layer's output. Positions: every one that
# went through the model (the last sampled token never does), at most 64.
expect=$(/usr/bin/python3 - "$out/stderr.txt" <<'PY'
import json, re, sys
m = re.search(r"prompt (\d+) tokens, generated (\d+) tokens", open(sys.argv[1]).read())
depths = json.load(open("models/tiny/config.json"))["num_hidden_layers"] + 1
positions = min(64, int(m.group(1)) + int(m.group(2)) - 1)
print("%d lens cells, %d attributions" % (depths * positions, positions))
PY
)
echo "expected: $expect"
case "$status" in
    *"$expect"*) ;;
    *) echo "FAIL: the page says '$status', not '$expect'"; exit 1 ;;
esac
grep -q "<section id='lens'>" "$out/report.html" || { echo "FAIL: no lens section in the page"; exit 1; }

echo "== the check catches a planted JavaScript error"
sed 's|</body>|<script>null.planted();</script></body>|' "$out/report.html" >"$out/planted.html"
planted=$(page_status "$out/planted.html")
echo "planted page says: $planted"
case "$planted" in
    REPORT_ERROR*) ;;
    *) echo "FAIL: a page with a JavaScript error was not caught"; exit 1 ;;
esac

echo "== a 500-token run fits the window"
./run models/tiny "Why is the sky blue?" -n 500 -t 1 -s 1 --no-gen-config --report "$out/long.html" \
    >/dev/null 2>"$out/long.txt" || { cat "$out/long.txt"; exit 1; }
grep -q "generated 500 tokens" "$out/long.txt" || { echo "FAIL: the long run did not make 500 tokens"; exit 1; }
# page_width PAGE: "scrollWidth clientWidth" of the page at 1280x900, read
# by a script added to a copy of it.
page_width() {
    /usr/bin/python3 - "$1" "$1.w.html" <<'PY'
import sys
t = open(sys.argv[1], encoding="utf-8").read()
probe = ('<script>window.addEventListener("load", function () { var d = document.createElement("div");'
         ' d.id = "width-status"; d.textContent = document.documentElement.scrollWidth + " " +'
         ' document.documentElement.clientWidth; document.body.appendChild(d); });</script>')
i = t.find("<head>")
open(sys.argv[2], "w", encoding="utf-8").write(t[:i + 6] + probe + t[i + 6:])
PY
    browser --window-size=1280,900 --virtual-time-budget=3000 --dump-dom "file://$PWD/$1.w.html" 2>/dev/null |
        grep -o 'id="width-status">[^<]*' | sed 's/.*>//' || true
}
wide_enough() { [ -n "$1" ] && [ "${1% *}" -le "$((${1#* } + 1))" ]; }
w=$(page_width "$out/long.html")
echo "500 tokens: page ${w% *} px wide in a ${w#* } px window"
wide_enough "$w" || { echo "FAIL: the page scrolls sideways (or did not load): '$w'"; exit 1; }
sed 's|</body>|<div style="width: 3000px">planted</div></body>|' "$out/long.html" >"$out/wide.html"
w=$(page_width "$out/wide.html")
echo "planted 3000 px element: page ${w% *} px wide"
wide_enough "$w" && { echo "FAIL: a page wider than the window was not caught"; exit 1; }

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
