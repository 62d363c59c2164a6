#!/usr/bin/env bash
# tests/check_web.sh — the browser build prints what ./run prints.
# tier: all
#
# Builds the WebAssembly module (make web's web/build.sh, which links the
# test models into build/web), serves the folder with python3 -m http.server
# and opens commands in headless Chromium as index.html?cmd=...
# (web/headless.js). Each page's standard output must equal the native
# ./run's, byte for byte, run in build/web so every path reads the same:
# sampled text for the default seed, greedy decoding, fwd's numbers, the
# lens's tables, info, the tokenizer's ids, a test model of each family, the
# chat reading the page's input box; with -vv, every tensor statistic line
# of the log. A bad flag must give ./run's one-line error and exit status,
# --report must hand its page back (about the native page's size: it holds
# timings), a model file that is not a model the loader's error (not a hung
# page), and serve a line saying it is not available. Stop must end a long
# command, a picked model too large for the module's memory must be refused
# with one line, and a model folder and a GGUF file picked with the page's
# file inputs (read from disk, never uploaded) must print what ./run prints
# on the same files. Prints the time of the default command's first output
# after the page began to load. An Emscripten build and Chromium do not fit
# `make test`'s minutes: `make test-all` runs it. On a 2-core machine: about
# 30 s once the module is built (most of it in Chromium), about 5 minutes
# with the module's first build; CI's budget is 90.
set -uo pipefail
cd "$(dirname "$0")/.."

[ -d /usr/share/nodejs/acorn ] && export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
command -v em++ >/dev/null || { echo "SKIP: em++ is not installed (tools/install_deps.sh web)"; exit 77; }
command -v chromium >/dev/null || { echo "SKIP: chromium is not installed (make deps)"; exit 77; }
[ -x ./run ] || { echo "./run is not built (make)"; exit 1; }
for m in tiny qwen3-tiny; do [ -f "models/$m/model.safetensors" ] || { echo "models/$m is missing (make models)"; exit 1; }; done

echo "== building the module (web/build.sh)"
t0=$(date +%s)
bash web/build.sh >build/check_web_build.log 2>&1 || { tail -20 build/check_web_build.log; echo "FAIL: the web build"; exit 1; }
tail -1 build/check_web_build.log
echo "built in $(( $(date +%s) - t0 )) s"
WEB=build/web
# A model folder whose weights file is not a safetensors file.
mkdir -p $WEB/models/broken
cp models/tiny/config.json models/tiny/tokenizer.json models/tiny/tokenizer_config.json $WEB/models/broken/
printf 'this is not a model, only text' >$WEB/models/broken/model.safetensors
bash web/build.sh --add  # the manifest again, with models/broken in it
size=$(( $(stat -c %s $WEB/lantern.wasm) ))
echo "lantern.wasm: $size bytes"
[ "$size" -le 4000000 ] || { echo "FAIL: the module is over 4 MB"; exit 1; }

port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd $WEB && exec /usr/bin/python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/index.html" && break; sleep 0.1; done

# name | command line | the chat's input (optional)
CASES=$(cat <<'EOF'
generate, default seed|./run "In the beginning"
greedy, 40 tokens|./run "In the beginning" -n 40 -t 0
a seed and a temperature|./run "And God said" -n 24 -s 7 -t 1.2
fwd|./run fwd trained/kjv 100 0
lens|./run lens trained/kjv "In the beginning God created the heaven and the" --raw -q --top 3
lens, every position|./run lens trained/kjv "In the beginning God created" --raw -q --pos all --top 2
info|./run info trained/kjv
-vv statistics|./run "In the beginning" -n 3 -vv
Qwen2 test model|./run models/tiny "Why is the sky blue?" -n 16 -s 7
Qwen3 test model|./run models/qwen3-tiny "Hello there" -n 12 -s 3
tokenizer (NFC, Unicode classes)|./run encode models/tiny "héllo wörld ½ Ｈｅｌｌｏ 123 — 東京 🙂 é"
chat from the input box|./run chat -n 12 -s 5|Who was Moses?
the HTML report|./run "In the beginning" -n 8 --report report.html
bad flag|./run --bogus
not a model|./run models/broken "hi"
EOF
)
urlenc() { /usr/bin/python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
urls=()
while IFS='|' read -r name cmd input; do
    u="http://127.0.0.1:$port/index.html?cmd=$(urlenc "$cmd")"
    [ -n "$input" ] && u="$u&stdin=$(urlenc "$input")"
    urls+=("$u")
done <<<"$CASES"
urls+=("http://127.0.0.1:$port/index.html?cmd=$(urlenc "./run serve")")
# Stop ends a long command and the page answers meanwhile; a picked model
# too large for wasm32's memory is refused with one line before any is read.
urls+=("open:http://127.0.0.1:$port/index.html?cmd=$(urlenc './run models/tiny "Tell me a long story" -n 100000 --no-gen-config')")
urls+=('js:new Promise(r => setTimeout(r, 1500)).then(() => { document.getElementById("stop").click(); return [window.lantern.status, document.getElementById("status").textContent]; })')
urls+=('js:pick([{size: 5 * 1024 ** 3, name: "model.safetensors"}], "big"), [picked.length, document.getElementById("stderr").textContent]')
# A model picked with the file inputs, read from this machine's disk by the
# page: a folder's files (the page names it /picked/model) and a GGUF file.
./run convert models/tiny build/check_web_tiny.gguf --type q8_0 >/dev/null 2>&1 ||
    { echo "FAIL: ./run convert models/tiny build/check_web_tiny.gguf"; exit 1; }
# run_picked ARGS: the page runs ./run on the model it was given (the page's
# own name for it, pickedName) with ARGS.
run_picked() { printf 'js:document.getElementById("cmd").value = "./run " + pickedName + %s; document.getElementById("run").click(); pickedName' \
    "$(/usr/bin/python3 -c 'import json, sys; print(json.dumps(" " + sys.argv[1]))' "$1")"; }
urls+=("open:http://127.0.0.1:$port/index.html"
       "files:#folder:models/tiny" "$(run_picked '"Why is the sky blue?" -n 16 -s 7')" wait
       "files:#gguf:build/check_web_tiny.gguf" "$(run_picked '"Hello there" -n 12 -s 3')" wait)

echo "== ${#urls[@]} commands in headless Chromium"
t0=$(date +%s)
node --experimental-websocket web/headless.js --timeout 180 "${urls[@]}" >build/check_web_pages.jsonl 2>build/check_web_headless.log ||
    { cat build/check_web_headless.log; echo "FAIL: headless Chromium"; exit 1; }
echo "pages done in $(( $(date +%s) - t0 )) s"

# Each case against the native ./run, run in build/web.
CASES="$CASES" /usr/bin/python3 - "$WEB" <<'PY'
import base64, json, os, re, shlex, subprocess, sys
web = sys.argv[1]
cases = [l.split("|") for l in os.environ["CASES"].strip().split("\n")]
pages = [json.loads(l) for l in open("build/check_web_pages.jsonl")]
fails = 0
def err_line(b):
    lines = [l for l in b.decode("utf-8", "replace").split("\n") if l.startswith("error:")]
    return lines[-1] if lines else None
def stats(b):  # the -vv tensor lines ([T ...]), the numbers they print
    return [l for l in b.decode("utf-8", "replace").split("\n") if l.startswith("[T ")]
natives = []
for (name, cmd, *rest), page in zip(cases, pages):
    if page.get("timeout"):
        print("FAIL %s: the page did not finish" % name); fails += 1; continue
    words = shlex.split(cmd)
    words[0] = os.path.abspath("run")
    native = subprocess.run(words, cwd=web, input=(rest[0] + "\n").encode() if rest else b"", capture_output=True)
    natives.append(native.stdout)
    out, err = base64.b64decode(page["out"]), base64.b64decode(page["err"])
    problems = []
    if out != native.stdout:
        problems.append("stdout differs:\n  native:  %r\n  browser: %r" % (native.stdout[:300], out[:300]))
    if page["text"] != native.stdout.decode("utf-8", "replace"):
        problems.append("#stdout's text is not the native output")
    if page["status"] != native.returncode:
        problems.append("exit status %s, native %s" % (page["status"], native.returncode))
    if err_line(err) != err_line(native.stderr):
        problems.append("error line %r, native %r" % (err_line(err), err_line(native.stderr)))
    if "-vv" in words:
        if not stats(native.stderr) or stats(err) != stats(native.stderr):
            problems.append("-vv statistics differ (%d lines native, %d browser)" % (len(stats(native.stderr)), len(stats(err))))
    if "--report" in words:
        native_size = os.path.getsize(os.path.join(web, "report.html"))
        got = dict(page.get("files", []))
        if not got.get("report.html") or abs(got["report.html"] - native_size) > native_size // 5:
            problems.append("the page's report.html: %s bytes, native %d" % (got.get("report.html"), native_size))
        else:
            report_note = ["report.html %d bytes (native %d)" % (got["report.html"], native_size)]
    what = "%d bytes of stdout" % len(out) + ("; " + err_line(err) if err_line(err) else "") + \
           ("; %d -vv statistic lines" % len(stats(err)) if "-vv" in words else "") + \
           ("; " + report_note[0] if "--report" in words and not problems else "")
    if problems:
        fails += 1
        print("FAIL %s (%s):\n  %s" % (name, cmd, "\n  ".join(problems)))
    else:
        print("ok   %s: %s" % (name, what))
serve = pages[len(cases)]
line = err_line(base64.b64decode(serve.get("out", "") or "") + base64.b64decode(serve.get("err", "") or ""))
if serve.get("status") == 1 and line and "not available in the browser" in line:
    print("ok   serve: %s" % line)
else:
    print("FAIL serve: %r" % serve); fails += 1
# The comparison can fail: the sampled page against the greedy native output.
if base64.b64decode(pages[0]["out"]) == natives[1]:
    print("FAIL self-test: the sampled page's output equals the greedy one"); fails += 1
stop, big = pages[len(cases) + 2], pages[len(cases) + 3]
if stop.get("value") == [130, "stopped"]:
    print("ok   Stop ends a running command: status %s, %r" % tuple(stop["value"]))
else:
    print("FAIL Stop: %r" % stop); fails += 1
v = big.get("value") or [None, ""]
if v[0] == 0 and v[1].count("\n") == 1 and v[1].startswith("error: big: 5.0 GiB does not fit"):
    print("ok   a 5 GiB model is refused before it is read: %s" % v[1].strip())
else:
    print("FAIL the 5 GiB model: %r" % big); fails += 1
# The picked models: the last two results, against ./run on the same files.
picks = [p for p in pages if p.get("wait")]
names = [p.get("value") for p in pages if "pickedName" in p.get("js", "")]
if len(names) != 2 or not all(isinstance(n, str) and n.startswith("/picked/") for n in names):
    print("FAIL the picked models' names: %r (the page ran before it saw the files?)" % names); fails += 1
for page, words, name in [(picks[0], [os.path.abspath("run"), "models/tiny", "Why is the sky blue?", "-n", "16", "-s", "7"], "a picked folder"),
                          (picks[1], [os.path.abspath("run"), "build/check_web_tiny.gguf", "Hello there", "-n", "12", "-s", "3"], "a picked GGUF file")]:
    native = subprocess.run(words, capture_output=True)
    out = base64.b64decode(page.get("out", ""))
    if page.get("status") == 0 and out == native.stdout and native.returncode == 0:
        print("ok   %s: %d bytes of stdout, as ./run %s" % (name, len(out), words[1]))
    else:
        print("FAIL %s: status %s\n  native:  %r\n  browser: %r" % (name, page.get("status"), native.stdout[:200], out[:200])); fails += 1
first = pages[0]
print("first output of '%s' %.0f ms after the page began to load (whole command %.0f ms)" %
      (cases[0][1], first.get("firstOutputMs") or -1, first.get("doneMs") or -1))
sys.exit(1 if fails else 0)
PY
rc=$?
[ $rc = 0 ] && echo "OK: the browser printed what ./run prints"
exit $rc
