#!/usr/bin/env bash
# tier: all (tests/run_all.sh: make test-all only, too long for make test)
# tests/check_sanitize.sh — `make sanitize` as part of `make test`: the unit
# tests and the command-line checks once more, in a build with
# AddressSanitizer and UndefinedBehaviorSanitizer (build/sanitize). Any
# report fails. (The ThreadSanitizer run over the server, `make sanitize
# SANITIZE=thread`, is a separate target: see book/B-untrusted-input.md.)
cd "$(dirname "$0")/.."
nice make --no-print-directory sanitize
