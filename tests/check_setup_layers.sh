#!/usr/bin/env bash
# tests/check_setup_layers.sh — tools/install_deps.sh installs in layers:
# `make run` (layer run) asks apt only for what building and running need,
# `make test` (layer test) adds what its checks use, `make test-all` (layer
# all) the cross compiler, qemu and clang; `make web` (layer web) Emscripten. Run on a copy of the script with
# stand-ins for apt-get, dpkg, dpkg-query and npm that report every package
# missing and record what would be installed; nothing is installed.
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }

mkdir -p "$T/repo/tools" "$T/repo/models/qwen-tokenizer" "$T/bin"
cp tools/install_deps.sh tools/package.json "$T/repo/tools/"
: >"$T/repo/models/qwen-tokenizer/tokenizer.json"  # the tokenizer is there: no fetch
cat >"$T/bin/dpkg-query" <<'EOF'
#!/bin/sh
exit 1
EOF
cat >"$T/bin/dpkg" <<'EOF'
#!/bin/sh
case "$1" in --print-architecture) echo amd64 ;; --print-foreign-architectures) ;; *) echo "dpkg $*" >>"$LOG" ;; esac
EOF
cat >"$T/bin/apt-get" <<'EOF'
#!/bin/sh
echo "apt-get $*" >>"$LOG"
EOF
cat >"$T/bin/npm" <<'EOF'
#!/bin/sh
echo "npm $*" >>"$LOG"
EOF
printf '#!/bin/sh\necho v20.0.0\n' >"$T/bin/node"
chmod +x "$T/bin/"*

for layer in run test all web; do
    LOG="$T/$layer.log" PATH="$T/bin:$PATH" bash "$T/repo/tools/install_deps.sh" "$layer" >"$T/$layer.out" 2>&1 ||
        bad "install_deps.sh $layer exited $?: $(tail -2 "$T/$layer.out")"
    grep "install" "$T/$layer.log" 2>/dev/null | tr ' ' '\n' | grep -v '^-' | sort -u >"$T/$layer.pkgs"
done
has() { grep -qx "$2" "$T/$1.pkgs"; }
for p in g++ make libutf8proc-dev libpcre2-dev libcpp-httplib-dev nlohmann-json3-dev libstb-dev libedit-dev; do
    has run "$p" || bad "layer run does not install $p, which the build needs"
done
for p in python3-torch chromium clang qemu-user-static g++-aarch64-linux-gnu doctest-dev nodejs npm; do
    has run "$p" && bad "layer run (make run) installs $p, which only the tests use"
done
[ $fails = 0 ] && ok "make run's layer: the compiler and the build's libraries, nothing for the tests ($(wc -l <"$T/run.pkgs") names)"
f0=$fails
for p in python3-torch chromium doctest-dev pandoc; do has test "$p" || bad "layer test does not install $p"; done
for p in qemu-user-static g++-aarch64-linux-gnu clang libutf8proc-dev:arm64; do
    has test "$p" && bad "layer test (make test) installs $p, which only make test-all uses"
done
[ $fails = $f0 ] && ok "make test's layer: the checks' tools, not the ARM, qemu and clang ones"
f0=$fails
for p in qemu-user-static g++-aarch64-linux-gnu clang libutf8proc-dev:arm64 python3-torch; do has all "$p" || bad "layer all does not install $p"; done
grep -q "npm ci" "$T/run.log" 2>/dev/null && bad "layer run installs the tools' npm modules"
grep -q "npm ci" "$T/test.log" 2>/dev/null || bad "layer test does not install the tools' npm modules"
[ $fails = $f0 ] && ok "make test-all's layer adds the cross compiler, qemu, clang; npm modules from the test layer on"
f0=$fails
for p in emscripten node-acorn dpkg-dev libutf8proc-dev libpcre2-dev nlohmann-json3-dev; do has web "$p" || bad "layer web does not install $p"; done
for p in python3-torch chromium clang; do has web "$p" && bad "layer web (make web) installs $p, which only the tests use"; done
has all emscripten || bad "layer all does not install emscripten (tests/check_web.sh)"
[ $fails = $f0 ] && ok "make web's layer: Emscripten, acorn and dpkg-dev beside the build's libraries"
[ $fails = 0 ] && echo "all setup layer checks passed"
[ $fails = 0 ]
