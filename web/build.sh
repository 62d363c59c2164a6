#!/usr/bin/env bash
# web/build.sh — make web: Lantern as a WebAssembly module and a page, in build/web/.
#
# 1. the sources of utf8proc and PCRE2 at the native build's versions
#    (web/fetch_libs.sh, Debian source packages, checked against the .dsc);
# 2. the engine, the two libraries and web/stubs.cpp compiled by Emscripten
#    (web/web.mk) into build/web/lantern.js and lantern.wasm;
# 3. the page (web/index.html, web/worker.js), the default model
#    (trained/kjv), links to the test models (make models) where they exist,
#    and files.json, the list of model files the page may fetch: a command
#    that names one of those folders or files gets them.
# build/web then works from any static server (python3 -m http.server).
# Other model folders go in as copies with: web/build.sh --add DIR...
# (then build/web/DIR); web/build.sh --add alone rewrites files.json.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=build/web
OBJ=build/web-obj

# Debian 12's Emscripten runs its JavaScript optimizer under Node.js, which
# finds acorn only in Debian's own module folder.
[ -d /usr/share/nodejs/acorn ] && export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
command -v em++ >/dev/null || { echo "web: em++ is missing: tools/install_deps.sh web (Debian's emscripten)" >&2; exit 1; }

# manifest: files.json, every model file under build/web (paths relative to it).
manifest() {
    (cd "$OUT" && find -L $(ls -d trained models 2>/dev/null) -type f | LC_ALL=C sort |
        /usr/bin/python3 -c 'import json, os, sys; print(json.dumps({p: os.path.getsize(p) for p in sys.stdin.read().split()}, indent=0))') \
        >"$OUT/files.json"
}
# A model folder's files the engine reads.
copy_model() {  # SRC DEST
    mkdir -p "$2"
    for f in config.json generation_config.json model.safetensors tokenizer.json tokenizer_config.json; do
        [ -f "$1/$f" ] && cp -p "$1/$f" "$2/"
    done
    for f in "$1"/*.gguf; do [ -f "$f" ] && cp -p "$f" "$2/"; done
    return 0
}

if [ "${1:-}" = --add ]; then
    shift
    for d in "$@"; do copy_model "$d" "$OUT/${d#./}"; done
    manifest
    exit 0
fi

read -r utf8proc_dir pcre2_dir < <(bash web/fetch_libs.sh "$OBJ/src")
echo "web: building with $(em++ --version | head -1)"
nice make --no-print-directory -f web/web.mk -j"${JOBS:-2}"
cp web/index.html web/worker.js "$OUT/"
copy_model trained/kjv "$OUT/trained/kjv"
# The test models, linked rather than copied (the page reads them only
# when a command names them).
for d in models/*/; do
    d=${d%/}
    [ -f "$d/config.json" ] || continue
    mkdir -p "$OUT/models"
    [ -e "$OUT/$d" ] || ln -s "../../../$d" "$OUT/$d"
done
manifest
wasm=$(stat -c %s "$OUT/lantern.wasm")
echo "web: $OUT/ ready: lantern.wasm $wasm bytes, lantern.js $(stat -c %s "$OUT/lantern.js") bytes; serve it with: (cd $OUT && python3 -m http.server)"
