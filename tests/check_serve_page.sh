#!/usr/bin/env bash
# tests/check_serve_page.sh — the page `./run serve` answers GET / with
# (serve_page.html), opened in headless Chromium against a live server on
# loopback:
#   1. it loads with no uncaught JavaScript error (a planted one is caught);
#   2. a question typed into it — the page's ?ask= hook fills the box and
#      clicks Send — streams the same text the API returns for the same
#      settings, each token in its own shaded span;
#   3. its scheduler panel shows another client's request joining while its
#      own answer streams.
set -u
cd "$(dirname "$0")/.."
MODEL=models/tiny
. tests/server/lib.sh
needs ./run "$MODEL/model.safetensors" chromium
TMP=$(mktemp -d)
OTHERS=""
cleanup() {
    [ -n "$OTHERS" ] && kill "$OTHERS" 2>/dev/null
    stop_servers
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

serve "$TMP/server.log" "$MODEL" --threads 1 --parallel 4 || fail "the server did not start"

curl -s -D "$TMP/head" "$URL/" >"$TMP/page.html"
grep -qi '^content-type: text/html' "$TMP/head" && grep -q '<title>Lantern</title>' "$TMP/page.html" ||
    fail "GET / did not answer the page"
ok "GET / answers the page ($(wc -c <"$TMP/page.html") bytes, text/html)"

# The page starts from the server's defaults: generation_config.json's
# temperature (0.7), not a temperature of its own.
browser --virtual-time-budget=5000 --dump-dom "$URL/" >"$TMP/plain.dom" 2>/dev/null
grep -q 'id="temp" type="number" value="0.7"' "$TMP/plain.dom" ||
    fail "the page's temperature is not the server's default 0.7: $(grep -o '<input id="temp"[^>]*>' "$TMP/plain.dom")"
ok "the page starts at the server's default temperature (0.7, from generation_config.json via /props)"

# The answer the API gives for the settings the page will use.
Q="Why is the sky blue?"
N=40
curl -s "$URL/v1/chat/completions" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"$Q\"}],\"max_tokens\":$N,\"temperature\":0}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["message"]["content"], end="")' >"$TMP/api.txt"
[ -s "$TMP/api.txt" ] || fail "the API gave no answer"

# Another client keeps asking while the page runs: its requests join the
# batch next to the page's.
( while :; do
      curl -s "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":60}' >/dev/null
  done ) &
OTHERS=$!

browser --virtual-time-budget=30000 --dump-dom "$URL/?ask=$(python3 -c 'import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1]))' "$Q")&max_tokens=$N&temperature=0" \
    >"$TMP/page.dom" 2>"$TMP/chromium.log"
kill "$OTHERS" 2>/dev/null
OTHERS=""
if grep -i 'uncaught' "$TMP/chromium.log" | head -3 | grep .; then fail "uncaught JavaScript error in the page"; fi
ok "the page loaded and ran with no uncaught error"

python3 - "$TMP/page.dom" "$TMP/api.txt" <<'EOF' || fail "the page's answer or panel"
import html, json, re, sys
dom = open(sys.argv[1]).read()
api = open(sys.argv[2]).read()
m = re.search(r'data-answer="([^"]*)"', dom)
if not m:
    print("no answer in the page; status: %s" % re.findall(r'id="status">([^<]*)', dom)); sys.exit(1)
ans = json.loads(html.unescape(m.group(1)))
if ans["text"] != api:
    print("the page streamed %r, the API answered %r" % (ans["text"], api)); sys.exit(1)
last = dom.split('class="msg assistant"')[-1].split("</div>")[0]
spans = re.findall(r'<span class="tok" style="background: rgba\([^)]*\);?">([^<]*)</span>', last)
if "".join(html.unescape(s) for s in spans) != api or len(spans) < 2:
    print("the answer's token spans spell %r" % "".join(spans)); sys.exit(1)
print("ok   the page's streamed answer equals the API's for the same settings (%d chars, %d shaded tokens)" % (len(api), len(spans)))
own = ans["id"].split("-")[-1]
joined = re.findall(r'class="joined" data-request="(\d+)"', dom)
busy = int(re.search(r'data-max-busy="(\d+)"', dom).group(1))
if own not in joined or not [j for j in joined if j != own] or busy < 2:
    print("the panel saw requests %s join (the page's own: %s), at most %d busy" % (joined, own, busy)); sys.exit(1)
print("ok   the panel showed the page's request #%s and %d others joining, %d slots busy at once" % (own, len(joined) - 1, busy))
EOF

# The check catches an error: a copy of the page with a planted one.
sed 's|</body>|<script>null.planted();</script></body>|' "$TMP/page.html" >"$TMP/planted.html"
browser --virtual-time-budget=3000 --dump-dom "file://$TMP/planted.html" >/dev/null 2>"$TMP/planted.log"
grep -qi 'uncaught' "$TMP/planted.log" || fail "a planted JavaScript error was not caught"
ok "a planted JavaScript error is caught"
echo "all serve page checks passed"
