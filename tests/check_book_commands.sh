#!/usr/bin/env bash
# tier: all (tests/run_all.sh: make test-all only, too long for make test)
# The book tells the truth, the whole of it: tools/book_check.py runs every
# `sh try` command of book/*.md, compares every `text output-of:` block with
# the command's real output, and repeats the static checks (tests/check_book.sh
# runs those alone, with the checker's self-test).
set -uo pipefail
cd "$(dirname "$0")/.."
/usr/bin/python3 tools/book_check.py
