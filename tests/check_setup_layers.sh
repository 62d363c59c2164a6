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

for layer in run unit test all web; do
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
has unit doctest-dev || bad "layer unit (make unit) does not install doctest-dev, which the unit tests include"
for p in g++ libutf8proc-dev; do has unit "$p" || bad "layer unit does not install $p"; done
for p in python3-torch chromium pandoc graphviz nodejs clang; do
    has unit "$p" && bad "layer unit (make unit) installs $p, which the unit tests and make models do not use"
done
grep -q "npm ci" "$T/unit.log" 2>/dev/null && bad "layer unit installs the tools' npm modules"
make -n --no-print-directory unit 2>/dev/null | grep -q "install_deps.sh unit" || bad "make unit does not run tools/install_deps.sh unit"
grep -q "install_deps.sh run" tools/make_models.sh || bad "make models installs more than the run layer when the tokenizer is missing"
[ $fails = $f0 ] && ok "make unit's layer: doctest and what make models needs, not PyTorch, Chromium or pandoc"

# Another apt holding its locks: apt-get stands in, failing as apt does while
# a lock is held (the lists lock during update, the dpkg lock during an
# install) for its first HELD runs, then working.
cat >"$T/bin/apt-get" <<'EOF'
#!/bin/sh
echo "apt-get $*" >>"$LOG"
n=$(cat "$COUNT" 2>/dev/null || echo 0); echo $((n + 1)) >"$COUNT"
case "$*" in *update*) lock=/var/lib/apt/lists/lock ;; *) lock=/var/lib/dpkg/lock-frontend ;; esac
case "$*" in *"$LOCKED"*)
    if [ "$n" -lt "${HELD:-2}" ]; then
        echo "E: Could not get lock $lock. It is held by process 4242 (apt-get)" >&2
        echo "E: Unable to acquire the dpkg frontend lock ($lock), is another process using it?" >&2
        exit 100
    fi ;;
esac
exit 0
EOF
chmod +x "$T/bin/apt-get"
apt_run() {  # name, the apt-get command that finds a lock held[, seconds to wait]
    rm -f "$T/count" "$T/$1.log"
    LOCKED="$2" COUNT="$T/count" LOG="$T/$1.log" LANTERN_APT_POLL=0.1 LANTERN_APT_WAIT=${3:-30} PATH="$T/bin:$PATH" \
        bash "$T/repo/tools/install_deps.sh" run >"$T/$1.out" 2>&1
}
f0=$fails
apt_run update "update"; rc=$?
[ $rc = 0 ] || bad "the lists lock held during apt-get update: exit $rc, not a wait ($(tail -1 "$T/update.out"))"
grep -q "waiting" "$T/update.out" || bad "the lists lock held during apt-get update: nothing says it waits"
grep -q "install" "$T/update.log" 2>/dev/null || bad "the lists lock held during apt-get update: nothing was installed after it freed"
apt_run install "install"; rc=$?
[ $rc = 0 ] && ! grep -q "could not install" "$T/install.out" && grep -q "waiting" "$T/install.out" ||
    bad "the dpkg lock held during the install: exit $rc; $(grep -m1 "could not\|waiting" "$T/install.out")"
HELD=1000000 apt_run never "update" 1; rc=$?
[ $rc = 1 ] && grep -q "still held" "$T/never.out" ||
    bad "a lock that never frees: exit $rc, last line: $(tail -1 "$T/never.out")"
[ $fails = $f0 ] && ok "another apt's locks: install_deps.sh says it waits, installs when they free, fails clearly when they do not"

[ $fails = 0 ] && echo "all setup layer checks passed"
[ $fails = 0 ]
