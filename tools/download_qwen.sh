#!/usr/bin/env bash
# Downloads a Qwen model from the Hugging Face Hub into models/<repo name>/.
#   bash tools/download_qwen.sh                     # Qwen/Qwen2.5-0.5B-Instruct
#   bash tools/download_qwen.sh Qwen/Qwen3-0.6B     # any Qwen2.5/Qwen3 repo
#   bash tools/download_qwen.sh Qwen/Qwen2.5-0.5B-Instruct-GGUF qwen2.5-0.5b-instruct-q8_0.gguf
#   ./run models/Qwen2.5-0.5B-Instruct "Hello"
#
# A safetensors repo: config.json, generation_config.json (if the repo has
# one), tokenizer.json, tokenizer_config.json and the weights: model.safetensors,
# or, for a sharded repo, model.safetensors.index.json and every shard its
# weight_map names. A repo whose name ends in -GGUF: the one .gguf FILE named
# (without FILE, the repo's .gguf files are listed from the Hub's API).
#
# As the Hub's own tools: HF_ENDPOINT (default https://huggingface.co) and
# HF_TOKEN (else the token file `hf auth login` writes, $HF_HOME/token),
# sent as "Authorization: Bearer ..." for private and gated repos.
# LANTERN_MODELS_DIR puts the folder elsewhere (default models/).
#
# Each file is fetched into FILE.part, resumed with a Range request after an
# interruption (in this run or a later one), checked against the sha256 the
# Hub gives for an LFS file (the X-Linked-Etag of its HEAD) and only then moved
# to FILE; a file already in place is not fetched again. Every error is one
# line naming the file or URL, and the exit status is non-zero.
#
# Tested against a mock Hub (tools/mock_hub.py, tests/check_download.sh), not
# against the real one: Lantern is developed on machines without a network.
set -euo pipefail
cd "$(dirname "$0")/.."
me=download_qwen.sh
die() { echo "$me: $*" >&2; exit 1; }

repo=${1:-Qwen/Qwen2.5-0.5B-Instruct}
want=${2:-}
[ $# -le 2 ] || die "usage: download_qwen.sh [REPO] [FILE] (got $# arguments)"
[[ $repo =~ ^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$ ]] ||
    die "'$repo' is not a Hub repo name (ORG/NAME, such as Qwen/Qwen2.5-0.5B-Instruct)"
endpoint=${HF_ENDPOINT:-https://huggingface.co}
endpoint=${endpoint%/}
token=${HF_TOKEN:-}
if [ -z "$token" ]; then
    tokfile=${HF_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/huggingface}/token
    [ -r "$tokfile" ] && token=$(tr -d ' \r\n' < "$tokfile")
fi
auth=()
[ -z "$token" ] || auth=(-H "Authorization: Bearer $token")
command -v curl >/dev/null || die "needs curl (apt-get install curl)"
command -v sha256sum >/dev/null || die "needs sha256sum (coreutils)"

gguf=0
shopt -s nocasematch
if [[ $repo == *-GGUF ]] || [[ $want == *.gguf ]]; then gguf=1; fi
shopt -u nocasematch
if [ -n "$want" ] && [ $gguf = 0 ]; then
    die "FILE ($want) is for a .gguf file from a -GGUF repo; $repo is a safetensors repo, fetched whole"
fi
dir=${LANTERN_MODELS_DIR:-models}/$(basename "$repo")

curl_base=(curl -sS --connect-timeout 30 --proto '=http,https' "${auth[@]}")
# One failed curl call as one line: no network, or the HTTP status explained.
curl_fail() {  # url, curl exit status, curl's stderr, http status
    local url=$1 rc=$2 err=$3 code=${4:-}
    err=$(printf '%s' "$err" | tr '\n' ' ' | sed 's/ *$//')
    case $rc in
        5|6|7|28|35|60) die "cannot reach $endpoint (no network?): $err" ;;
    esac
    case $code in
        401) die "$url: HTTP 401: the repo is private, gated or does not exist (check the name; set HF_TOKEN to a token that can read it)" ;;
        403) die "$url: HTTP 403: this token may not read the repo (a gated repo: accept its terms on the Hub first)" ;;
        404) die "$url: HTTP 404: no such file in $repo" ;;
        ""|000) die "$url: curl failed (exit $rc): $err" ;;
        *) die "$url: HTTP $code${err:+ ($err)}" ;;
    esac
}

# HEAD of a file, without following the Hub's redirect to its CDN: sets
# head_code, head_sha (the LFS sha256 from X-Linked-Etag, or an ETag that is
# one; empty for a git file) and head_size (X-Linked-Size or Content-Length).
head_file() {  # file
    local url=$endpoint/$repo/resolve/main/$1 rc=0 line name value etag="" linked="" lsize="" clen=""
    "${curl_base[@]}" -I -o "$T/head" -w '%{http_code}' "$url" >"$T/code" 2>"$T/err" || rc=$?
    head_code=$(cat "$T/code" 2>/dev/null || true)
    [ $rc = 0 ] || curl_fail "$url" $rc "$(cat "$T/err")" "$head_code"
    while IFS= read -r line; do
        line=${line%$'\r'}
        name=${line%%:*}; value=${line#*:}; value=${value# }
        case ${name,,} in
            x-linked-etag) linked=$value ;;
            etag) etag=$value ;;
            x-linked-size) lsize=$value ;;
            content-length) clen=$value ;;
        esac
    done < "$T/head"
    head_sha=""
    for v in "$linked" "$etag"; do
        v=${v#W/}; v=${v//\"/}
        if [[ $v =~ ^[0-9a-f]{64}$ ]]; then head_sha=$v; break; fi
    done
    # An LFS file's size is X-Linked-Size (its HEAD is a redirect to the CDN,
    # whose own Content-Length is the redirect's); a git file's, Content-Length.
    head_size=$lsize
    [ -n "$head_size" ] || [[ $head_code != 2?? ]] || head_size=$clen
    [[ $head_size =~ ^[0-9]+$ ]] || head_size=""
}

# GET url into out (the whole body, small files and the API): fails as one line.
get_small() {  # url, out
    local rc=0 code
    code=$("${curl_base[@]}" -L -o "$2" -w '%{http_code}' "$1" 2>"$T/err") || rc=$?
    if [ $rc != 0 ] || [[ $code != 2?? ]]; then curl_fail "$1" $rc "$(cat "$T/err")" "$code"; fi
}

# Fetches one file into $dir: FILE.part, resumed with Range, checked, moved.
fetch() {  # file [optional]
    local f=$1 optional=${2:-} dest=$dir/$1 part=$dir/$1.part url have tries=0 rc code got
    url=$endpoint/$repo/resolve/main/$f
    if [ -s "$dest" ]; then echo "have $dest"; return 0; fi
    head_file "$f" || true
    case $head_code in
        2??|3??) ;;
        404) if [ -n "$optional" ]; then echo "skip $f (not in $repo)"; return 0; fi
             curl_fail "$url" 22 "" 404 ;;
        *) curl_fail "$url" 22 "" "$head_code" ;;
    esac
    have=0
    [ -f "$part" ] && have=$(stat -c %s "$part")
    if [ -n "$head_size" ] && [ "$have" -gt "$head_size" ]; then rm -f "$part"; have=0; fi
    mkdir -p "$dir" || die "cannot create $dir"
    if [ "$have" -gt 0 ]; then echo "resuming $f at byte $have${head_size:+ of $head_size}"
    else echo "fetching $f${head_size:+ ($head_size bytes)}"; fi
    while :; do
        have=0
        [ -f "$part" ] && have=$(stat -c %s "$part")
        [ -n "$head_size" ] && [ "$have" = "$head_size" ] && break  # all there already
        rc=0
        code=$("${curl_base[@]}" -L -C - -o "$part" -w '%{http_code}' "$url" 2>"$T/err") || rc=$?
        if [ $rc = 0 ] && [[ $code == 2?? ]]; then break; fi
        case $rc in
            33) rm -f "$part" ;;  # the server cannot resume: start again
            18|52|55|56|92|28) ;; # cut off: resume from what arrived
            0) [[ $code == 416 ]] && rm -f "$part" || curl_fail "$url" 22 "" "$code" ;;
            *) curl_fail "$url" $rc "$(cat "$T/err")" "$code" ;;
        esac
        tries=$((tries + 1))
        [ $tries -lt "${LANTERN_DOWNLOAD_TRIES:-5}" ] ||
            die "$url: gave up after $tries tries ($(tr '\n' ' ' < "$T/err" | sed 's/ *$//')); run again to resume $part"
        echo "  interrupted at $(stat -c %s "$part" 2>/dev/null || echo 0) bytes; resuming"
        sleep 1
    done
    got=$(stat -c %s "$part")
    if [ -n "$head_size" ] && [ "$got" != "$head_size" ]; then
        rm -f "$part"; die "$dest: got $got bytes, the Hub says $head_size; deleted, run again"
    fi
    if [ -n "$head_sha" ]; then
        got=$(sha256sum "$part" | cut -d' ' -f1)
        if [ "$got" != "$head_sha" ]; then
            rm -f "$part"
            die "$dest: sha256 mismatch: the Hub says $head_sha, the download is $got; deleted"
        fi
        echo "  sha256 ok $got"
    fi
    mv "$part" "$dest"
}

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

if [ $gguf = 1 ]; then
    if [ -z "$want" ]; then
        api=$endpoint/api/models/$repo
        get_small "$api" "$T/api.json"
        mapfile -t names < <(tr -d '\n' < "$T/api.json" | grep -o '"rfilename" *: *"[^"]*"' |
                             sed 's/.*: *"//; s/"$//' | grep -i '\.gguf$' || true)
        [ ${#names[@]} -gt 0 ] || die "$api lists no .gguf file in $repo"
        if [ ${#names[@]} -gt 1 ]; then
            die "$repo has ${#names[@]} .gguf files; name one: bash tools/download_qwen.sh $repo FILE, FILE one of: ${names[*]}"
        fi
        want=${names[0]}
        echo "$repo has one .gguf file: $want"
    fi
    [[ $want != */* && $want != .* ]] || die "'$want' is not a file name in $repo's top folder"
    fetch "$want"
    ./run info "$dir/$want" | tail -6
    exit 0
fi

fetch config.json
fetch generation_config.json optional
fetch tokenizer.json
fetch tokenizer_config.json
# Sharded if the repo has an index (a folder already here needs no network).
if [ -s "$dir/model.safetensors.index.json" ]; then head_code=200
elif [ -s "$dir/model.safetensors" ]; then head_code=404
else head_file model.safetensors.index.json; fi
if [[ $head_code == [23]?? ]]; then
    fetch model.safetensors.index.json
    # The shard names are the weight_map's values (the keys are tensor names).
    mapfile -t shards < <(tr -d '\n' < "$dir/model.safetensors.index.json" |
                          sed 's/.*"weight_map"//' | grep -o ': *"[^"]*"' |
                          sed 's/^: *"//; s/"$//' | grep '\.safetensors$' | sort -u || true)
    [ ${#shards[@]} -gt 0 ] || die "$dir/model.safetensors.index.json: its weight_map names no .safetensors shard"
    echo "${#shards[@]} shards"
    for s in "${shards[@]}"; do
        [[ $s != */* && $s != .* ]] || die "$dir/model.safetensors.index.json: shard '$s' is not a file name"
        fetch "$s"
    done
elif [ "$head_code" = 404 ]; then
    fetch model.safetensors
else
    curl_fail "$endpoint/$repo/resolve/main/model.safetensors.index.json" 22 "" "$head_code"
fi
./run info "$dir" | tail -6
