#!/usr/bin/env bash
# tools/download_qwen.sh against a mock Hub (tools/mock_hub.py on a loopback
# port, serving generated models in the Hub's URL layout and headers): not the
# real Hub, which Lantern's machines cannot reach. Checks:
#   1. a single-file repo downloads and `./run info` loads it;
#   2. a sharded repo fetches every shard of its index, each once;
#   3. a -GGUF repo: without FILE, one line listing its .gguf files; with
#      FILE, that file;
#   4. HF_TOKEN is sent: a private repo fails without it (one line naming the
#      URL and HF_TOKEN) and downloads with it;
#   5. a download cut off halfway resumes in the same run with a Range
#      request, and a .part left by an earlier run is continued, not
#      restarted; both end with the right sha256;
#   6. a file whose bytes do not match the Hub's sha256 is deleted, with one
#      line naming it and both hashes;
#   7. a dead endpoint is the one-line "cannot reach ... (no network?)", and
#      a folder already downloaded needs no network.
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/lib.sh
for tool in curl sha256sum /usr/bin/python3; do
    command -v "$tool" >/dev/null || skip "needs $tool"
done
[ -x build/gen_model ] && [ -x ./run ] || { echo "FAIL build/gen_model or ./run missing (run make)"; exit 1; }
T=$(mktemp -d)
MOCK=""
trap '[ -z "$MOCK" ] || kill "$MOCK" 2>/dev/null; [ -z "$MOCK" ] || wait "$MOCK" 2>/dev/null; rm -rf "$T"' EXIT
show() { echo "  exit $rc; stdout:"; sed 's/^/    /' "$T/out"; echo "  stderr:"; sed 's/^/    /' "$T/err"; }
H=$T/hub O=$T/models R=lantern-test
sha() { sha256sum "$1" | cut -d' ' -f1; }

# --- the hub ---------------------------------------------------------------
mkdir -p "$H/$R/Tiny" "$H/$R/Tiny-Sharded" "$H/$R/Tiny-GGUF"
build/gen_model --out "$H/$R/Tiny" --preset tiny >/dev/null || { echo "FAIL gen_model"; exit 1; }
build/gen_model --out "$H/$R/Tiny-Sharded" --preset tiny --shards 3 >/dev/null || { echo "FAIL gen_model --shards"; exit 1; }
./run convert "$H/$R/Tiny" "$H/$R/Tiny-GGUF/tiny-q8_0.gguf" --type q8_0 >/dev/null 2>&1 || { echo "FAIL ./run convert"; exit 1; }
cp "$H/$R/Tiny-GGUF/tiny-q8_0.gguf" "$H/$R/Tiny-GGUF/tiny-copy-q8_0.gguf"
for name in Private Cut Part Bad; do cp -r "$H/$R/Tiny" "$H/$R/$name"; done
echo "$R/Private s3cret" > "$H/.private"
printf 'cut %s %s\ncorrupt %s\n' "$R/Cut/model.safetensors" 5000000 "$R/Bad/model.safetensors" > "$H/.faults"
want=$(sha "$H/$R/Tiny/model.safetensors")

/usr/bin/python3 tools/mock_hub.py 0 "$H" >"$T/mock.out" 2>"$T/mock.log" &
MOCK=$!
port=""
for _ in $(seq 50); do
    port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\).*|\1|p' "$T/mock.out")
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { echo "FAIL the mock hub did not start"; cat "$T/mock.log"; exit 1; }
rc=0
dl() {  # args...: runs the script against the mock; sets rc, $T/out, $T/err
    rc=0
    env -u HF_TOKEN ${TOKEN:+HF_TOKEN="$TOKEN"} HF_HOME="$T/hf-home" HF_ENDPOINT="${ENDPOINT:-http://127.0.0.1:$port}" \
        LANTERN_MODELS_DIR="$O" bash tools/download_qwen.sh "$@" >"$T/out" 2>"$T/err" || rc=$?
}
one_line() {  # the run failed with exactly one line on stderr, containing each argument
    local s
    [ $rc != 0 ] && [ "$(wc -l < "$T/err")" = 1 ] || return 1
    for s in "$@"; do grep -qF -- "$s" "$T/err" || return 1; done
}
seen() { grep -c -- "$1" "$T/mock.log"; }  # requests the mock saw matching

# --- 1. single file ----------------------------------------------------------
dl $R/Tiny
[ $rc = 0 ] && cmp -s "$H/$R/Tiny/model.safetensors" "$O/Tiny/model.safetensors" &&
    cmp -s "$H/$R/Tiny/tokenizer.json" "$O/Tiny/tokenizer.json" && [ ! -e "$O/Tiny/model.safetensors.part" ] &&
    grep -q "all 50 tensors present" "$T/out" && ./run info "$O/Tiny" >/dev/null 2>&1
s=$?; check "a single-file repo downloads, the files match the hub's and ./run info loads them" $s; [ $s = 0 ] || show

# --- 2. sharded --------------------------------------------------------------
dl $R/Tiny-Sharded
s=0
[ $rc = 0 ] && ./run info "$O/Tiny-Sharded" >/dev/null 2>&1 || s=1
for f in model-00001-of-00003 model-00002-of-00003 model-00003-of-00003; do
    cmp -s "$H/$R/Tiny-Sharded/$f.safetensors" "$O/Tiny-Sharded/$f.safetensors" || s=1
    [ "$(seen "^GET /$R/Tiny-Sharded/resolve/main/$f.safetensors ")" = 1 ] || s=1
done
[ ! -e "$O/Tiny-Sharded/model.safetensors" ] || s=1
check "a sharded repo fetches every shard its index names, each once, and loads" $s; [ $s = 0 ] || show

# --- 3. GGUF -----------------------------------------------------------------
dl $R/Tiny-GGUF
one_line tiny-q8_0.gguf tiny-copy-q8_0.gguf "$R/Tiny-GGUF" && [ "$(seen "^GET /api/models/$R/Tiny-GGUF ")" = 1 ] &&
    ! ls "$O/Tiny-GGUF/"*.gguf >/dev/null 2>&1
s=$?; check "a -GGUF repo without FILE: one line listing its .gguf files, nothing fetched" $s; [ $s = 0 ] || show
dl $R/Tiny-GGUF tiny-q8_0.gguf
[ $rc = 0 ] && cmp -s "$H/$R/Tiny-GGUF/tiny-q8_0.gguf" "$O/Tiny-GGUF/tiny-q8_0.gguf" && grep -q "GGUF v3" "$T/out"
s=$?; check "a -GGUF repo's named file downloads into models/<repo>/ and ./run info reads it" $s; [ $s = 0 ] || show

# --- 4. HF_TOKEN -------------------------------------------------------------
dl $R/Private
one_line "$R/Private/resolve/main/config.json" 401 HF_TOKEN && [ ! -e "$O/Private/model.safetensors" ]
s=$?; check "a private repo without HF_TOKEN: one line naming the URL, 401 and HF_TOKEN" $s; [ $s = 0 ] || show
TOKEN=s3cret dl $R/Private
[ $rc = 0 ] && cmp -s "$H/$R/Private/model.safetensors" "$O/Private/model.safetensors" &&
    [ "$(seen "^GET /$R/Private/resolve/main/config.json .*auth=yes")" = 1 ]
s=$?; check "with HF_TOKEN the private repo downloads (Authorization: Bearer sent)" $s; [ $s = 0 ] || show

# --- 5. resume ---------------------------------------------------------------
dl $R/Cut
[ $rc = 0 ] && [ "$(sha "$O/Cut/model.safetensors")" = "$want" ] &&
    [ "$(seen "^GET /cdn/$R/Cut/model.safetensors range=bytes=[1-9][0-9]*- .*-> 206")" -ge 1 ] &&
    [ "$(seen "^GET /cdn/$R/Cut/model.safetensors range=- ")" = 1 ]
s=$?; check "a download cut off after 5 MB resumes with a Range request and ends with the right sha256" $s; [ $s = 0 ] || show
mkdir -p "$O/Part"
head -c 7000000 "$H/$R/Part/model.safetensors" > "$O/Part/model.safetensors.part"
dl $R/Part
[ $rc = 0 ] && [ "$(sha "$O/Part/model.safetensors")" = "$want" ] && [ ! -e "$O/Part/model.safetensors.part" ] &&
    [ "$(seen "^GET /cdn/$R/Part/model.safetensors range=bytes=7000000- .*-> 206")" = 1 ] &&
    [ "$(seen "^GET /cdn/$R/Part/model.safetensors range=- ")" = 0 ]
s=$?; check "a .part left by an earlier run is continued from its end, not restarted" $s; [ $s = 0 ] || show

# --- 6. a file that does not match its sha256 --------------------------------
dl $R/Bad
one_line model.safetensors "$want" "sha256" && [ "$(grep -oE '[0-9a-f]{64}' "$T/err" | sort -u | wc -l)" = 2 ] &&
    [ ! -e "$O/Bad/model.safetensors" ] && [ ! -e "$O/Bad/model.safetensors.part" ]
s=$?; check "bytes that do not match the hub's sha256: deleted, one line naming the file and both hashes" $s; [ $s = 0 ] || show

# --- 7. no network -----------------------------------------------------------
dead=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ENDPOINT=http://127.0.0.1:$dead dl $R/Tiny-Elsewhere
one_line "download_qwen.sh: cannot reach http://127.0.0.1:$dead (no network?): " && [ ! -e "$O/Tiny-Elsewhere" ]
s=$?; check "a dead endpoint: one line, cannot reach ... (no network?)" $s; [ $s = 0 ] || show
ENDPOINT=http://127.0.0.1:$dead dl $R/Tiny-Sharded
[ $rc = 0 ] && grep -q "have .*model-00003-of-00003.safetensors" "$T/out"
s=$?; check "a folder already downloaded needs no network: the files in place are kept" $s; [ $s = 0 ] || show

summary
