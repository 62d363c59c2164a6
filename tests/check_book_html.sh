#!/usr/bin/env bash
# tier: all (tests/run_all.sh: make test-all only, too long for make test)
# tests/check_book_html.sh — the HTML book (make book) in a real browser.
#
# Renders book/*.md, their Chinese twins book/zh/*.md and the exercise pages
# (tools/book_render.py) into build/book_html_check, then, for both languages:
#   1. every relative link and image of every page points at a file that
#      exists, and a link with #anchor at an id that exists in its page;
#   2. every page, opened in headless Chromium from disk at 1280 and at 400
#      pixels wide, loads with no JavaScript error, every image decodes, and
#      nothing makes the page itself scroll sideways (a wide code block may
#      scroll inside its box; the page may not);
#   3. the search index exists and finds a word every reader looks for;
#   4. the formulas are MathML: chapter 4's render as <math> elements, and no
#      page shows TeX source ($$, \frac, \sum, \text{) as text;
#   5. a block wider than its box (code, a table, a formula) scrolls sideways
#      inside it (overflow-x auto or scroll) instead of being cut off, and
#      chapter 6's softmax example, at 400 pixels, is such a block;
#   6. each Chinese page's headings carry its English twin's anchors, in order
#      (the language switch and every #anchor link land on the same section);
#   7. the Chinese pages (tests/book_browser_zh.py, over the DevTools protocol):
#      their text is drawn with Noto CJK, the language switch lands on the same
#      section of the twin, and the search finds 注意力 in Chinese sections.
# First a self-test: a planted page with one broken link, one broken image,
# one script error, one too-wide element, one cut-off block and one formula
# left as TeX must be rejected for each.
set -uo pipefail
cd "$(dirname "$0")/.."
command -v chromium >/dev/null || { echo "chromium is not installed (make deps)"; exit 1; }
command -v pandoc >/dev/null || { echo "pandoc is not installed (make deps)"; exit 1; }
out=build/book_html_check
rm -rf "$out"
/usr/bin/python3 tools/book_render.py "$out" || exit 1
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT

# The probe: added to a copy of each page, next to it (so its relative paths
# still work). It records script errors, then after load writes one line of
# findings into the page, which --dump-dom shows.
probe='<script>
window.__errs = [];
window.addEventListener("error", function (e) {
  if (e.target && e.target !== window && (e.target.src || e.target.href)) window.__errs.push("resource failed: " + (e.target.src || e.target.href));
  else window.__errs.push("script error: " + e.message);
}, true);
window.addEventListener("load", function () {
  var f = window.__errs.slice();
  Array.prototype.forEach.call(document.images, function (im) {
    if (!im.complete || im.naturalWidth === 0) f.push("broken image: " + im.getAttribute("src"));
  });
  var w = document.documentElement.scrollWidth, v = document.documentElement.clientWidth;
  if (w > v + 1) {
    var wide = "";
    Array.prototype.forEach.call(document.body.querySelectorAll("*"), function (el) {
      if (!wide && el.getBoundingClientRect().right > v + 1 && getComputedStyle(el).position !== "fixed")
        wide = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + el.className : "");
    });
    f.push("page overflows sideways: " + w + " px wide in a " + v + " px window (first: " + wide + ")");
  }
  var scrolling = 0;
  Array.prototype.forEach.call(document.querySelectorAll("main pre, main table, main div.math-display"), function (el) {
    if (el.scrollWidth <= el.clientWidth + 1) return;
    // the box that takes the overflow: the block itself or the first one around it that does not let it spill
    var box = el, ox = "visible";
    while (box && box.tagName !== "MAIN" && (ox = getComputedStyle(box).overflowX) === "visible") box = box.parentElement;
    if (ox === "auto" || ox === "scroll") scrolling++;
    else f.push("cut off: a " + el.tagName.toLowerCase() + (el.className ? "." + el.className : "") + " " + el.scrollWidth +
                " px wide in a " + el.clientWidth + " px box does not scroll (overflow-x: " + ox + ")");
  });
  var tex = 0, walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    var n = walk.currentNode, p = n.parentNode;
    if (p.closest && p.closest("pre, code, script, style, math")) continue;
    if (/\$\$|\\frac\b|\\sum\b|\\text\{/.test(n.nodeValue)) tex++;
  }
  if (tex) f.push("TeX left as text: " + tex + " places (is pandoc run with --mathml?)");
  var info = document.createElement("div");
  info.id = "probe-info";
  info.textContent = "math " + document.getElementsByTagName("math").length + " scrolling " + scrolling;
  document.body.appendChild(info);
  var s = document.createElement("div");
  s.id = "probe-status";
  s.textContent = f.length ? "PROBE_FAIL " + f.join(" | ") : "PROBE_OK";
  document.body.appendChild(s);
});
</script>'

# browser_check PAGE WIDTH: prints the probe's verdict (and uncaught errors Chromium logged),
# then "| info math N scrolling M": the page's <math> elements and the wide blocks that scroll.
browser_check() {
    local page=$1 width=$2 copy
    copy="$(dirname "$page")/.probe-$(basename "$page")"
    /usr/bin/python3 - "$page" "$copy" "$probe" <<'PY'
import sys
page, copy, probe = sys.argv[1:4]
t = open(page, encoding="utf-8").read()
i = t.find("<head>")
t = t[:i + 6] + probe + t[i + 6:] if i >= 0 else probe + t
open(copy, "w", encoding="utf-8").write(t)
PY
    timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
        --disable-component-update --disable-sync --user-data-dir="$profile" --enable-logging=stderr --log-level=0 \
        --window-size="$width,900" --virtual-time-budget=3000 --dump-dom "file://$PWD/$copy" \
        >"$copy.dom" 2>"$copy.log"
    local status
    status=$(grep -o 'id="probe-status">[^<]*' "$copy.dom" | sed 's/^id="probe-status">//')
    [ -n "$status" ] || status="PROBE_FAIL the page never finished loading (no probe line)"
    if grep -qi "uncaught" "$copy.log"; then
        status="PROBE_FAIL ${status#PROBE_OK}${status:+ | }$(grep -i uncaught "$copy.log" | head -1 | sed 's/.*CONSOLE[^"]*//')"
        status=${status/PROBE_FAIL PROBE_FAIL/PROBE_FAIL}
    fi
    echo "$status | info $(grep -o 'id="probe-info">[^<]*' "$copy.dom" | sed 's/^id="probe-info">//')"
    rm -f "$copy" "$copy.dom" "$copy.log"
}

# link_check DIR: every relative href/src of every .html under DIR resolves.
link_check() {
    /usr/bin/python3 - "$1" <<'PY'
import html, os, re, sys
root = sys.argv[1]
pages = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".html") and not f.startswith(".")]
ids = {}
def ids_of(p):
    if p not in ids:
        ids[p] = set(re.findall(r'\bid="([^"]+)"', open(p, encoding="utf-8").read()))
    return ids[p]
bad = 0
for p in sorted(pages):
    text = open(p, encoding="utf-8").read()
    for attr, target in re.findall(r'\b(href|src)="([^"]*)"', text):
        target = html.unescape(target)
        if re.match(r"^[a-z]+:", target) or not target:
            continue
        if re.match(r"^(\.\./)+web/index\.html\?cmd=", target):
            continue  # a Run button: the browser build's page (make web), outside the book; tests/check_web.sh runs it
        path, _, frag = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(p), path)) if path else p
        if not os.path.exists(full):
            print("%s: %s=\"%s\": no such file" % (os.path.relpath(p, root), attr, target)); bad += 1
        elif frag and full.endswith(".html") and frag not in ids_of(full):
            print("%s: %s=\"%s\": no id \"%s\" in %s" % (os.path.relpath(p, root), attr, target, frag, os.path.relpath(full, root))); bad += 1
print("%d pages, %d broken links" % (len(pages), bad))
sys.exit(1 if bad else 0)
PY
}

echo "== self-test: a planted page must be rejected"
cat >"$out/planted.html" <<'HTML'
<!DOCTYPE html><html><head><meta charset="utf-8"><title>planted</title></head><body>
<p><a href="no-such-page.html">a broken link</a> <a href="01-how-to-read.html#no-such-anchor">a broken anchor</a></p>
<img src="img/no-such-image.svg" alt="broken">
<div style="width:3000px">too wide</div>
<main><pre style="overflow-x:hidden;max-width:300px">a line of code far wider than its box, which is cut off instead of scrolling sideways</pre>
<p>A formula left as TeX: $$\frac{1}{2}$$ and one rendered: <math><mi>x</mi></math></p></main>
<script>no_such_function();</script>
</body></html>
HTML
ok=1
links=$(link_check "$out" 2>&1)
for e in 'planted.html: href="no-such-page.html": no such file' 'no id "no-such-anchor"'; do
    grep -qF "$e" <<<"$links" || { echo "self-test: the link check did not report: $e"; ok=0; }
done
verdict=$(browser_check "$out/planted.html" 1280)
for e in "broken image: img/no-such-image.svg" "script error" "page overflows sideways" "cut off: a pre" \
         "TeX left as text: 1 places" "info math 1 scrolling 0"; do
    grep -qF "$e" <<<"$verdict" || { echo "self-test: the browser check did not report: $e (it said: $verdict)"; ok=0; }
done
rm -f "$out/planted.html"
[ $ok = 1 ] || exit 1
echo "self-test ok: broken link, broken anchor, broken image, script error, overflow, a cut-off block and TeX left as text all reported"

failed=0
echo "== links and images"
link_check "$out" || failed=1

echo "== every page in headless Chromium, 1280 and 400 px wide"
n=0
for page in "$out"/*.html "$out"/exercises/*.html "$out"/zh/*.html "$out"/zh/exercises/*.html; do
    for width in 1280 400; do
        verdict=$(browser_check "$page" "$width")
        n=$((n + 1))
        info=${verdict##*| info }
        verdict=${verdict% | info*}
        if [ "$verdict" != PROBE_OK ]; then echo "FAIL  ${page#"$out"/} at $width px: ${verdict#PROBE_FAIL }"; failed=1; fi
        case "${page#"$out"/} $width" in
            "04-kernels.html 1280")
                m=$(sed -n 's/^math \([0-9]*\).*/\1/p' <<<"$info")
                if [ "${m:-0}" -ge 5 ]; then echo "ok    04-kernels.html: $m formulas drawn as MathML <math> elements"
                else echo "FAIL  04-kernels.html has ${m:-no} <math> elements, not the 5 or more of its formulas"; failed=1; fi ;;
            "06-attention-kv-cache.html 400")
                s=$(sed -n 's/.*scrolling \([0-9]*\).*/\1/p' <<<"$info")
                if [ "${s:-0}" -ge 1 ]; then echo "ok    06-attention-kv-cache.html at 400 px: $s wide blocks scroll sideways in their boxes"
                else echo "FAIL  06-attention-kv-cache.html at 400 px: no wide block that scrolls (the softmax example should)"; failed=1; fi ;;
        esac
    done
done
echo "$n page loads checked"

echo "== the search index"
if grep -q '"title": "The KV cache"' "$out/search-index.js" && grep -q "window.BOOK_INDEX" "$out/search-index.js"; then
    echo "ok    search-index.js has the section \"The KV cache\""
else echo "FAIL  search-index.js lacks the section \"The KV cache\""; failed=1; fi

if grep -q '"title": "键值缓存"' "$out/zh/search-index.js" && grep -q "window.BOOK_INDEX" "$out/zh/search-index.js"; then
    echo "ok    zh/search-index.js has the section \"键值缓存\""
else echo "FAIL  zh/search-index.js lacks the section \"键值缓存\""; failed=1; fi

echo "== each Chinese page's headings carry its English twin's anchors, in the same order"
/usr/bin/python3 - "$out" <<'PY' || failed=1
import os, sys
sys.path.insert(0, "tools")
from book_render import heading_ids   # the renderer's own reading of a page's anchors
out = sys.argv[1]
def ids(p):
    return heading_ids(open(p, encoding="utf-8").read())
bad = n = 0
for d, _, fs in os.walk(os.path.join(out, "zh")):
    for f in sorted(fs):
        if not f.endswith(".html") or f.startswith(".") or f == "index.html" and d.endswith("zh"):
            continue
        zh = os.path.join(d, f)
        en = os.path.join(out, os.path.relpath(zh, os.path.join(out, "zh")))
        if not os.path.isfile(en):
            continue
        n += 1
        a, b = ids(en), ids(zh)
        if a != b:
            k = next(i for i in range(max(len(a), len(b))) if i >= len(a) or i >= len(b) or a[i] != b[i])
            print("FAIL  zh/%s: heading %d is #%s, its English twin's #%s" % (os.path.relpath(zh, os.path.join(out, "zh")), k + 1,
                  b[k] if k < len(b) else "(none)", a[k] if k < len(a) else "(none)"))
            bad += 1
print("%s    %d Chinese pages, %d whose anchors differ from their English twin's" % ("ok" if not bad else "FAIL", n, bad))
sys.exit(1 if bad else 0)
PY

echo "== the Chinese pages in Chromium: font, language switch, search"
/usr/bin/python3 tests/book_browser_zh.py "$out" || failed=1

[ $failed = 0 ] && echo "ok: the HTML book loads cleanly" || echo "FAILED: see above"
exit $failed
