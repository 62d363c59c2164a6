#!/usr/bin/python3
"""Keep the book true: run its commands, compare its outputs, check its code references.

Every book/*.md chapter is checked (chapters that do not exist yet are simply not there).

Conventions an author writes in (see book/01-how-to-read.md):

  ```sh try                     each non-empty line that is not a # comment is one command,
  ./run info models/tiny        run with bash from the repository root; it must exit 0.
  ```                           A line ending in a backslash continues on the next line.

  ```text output-of: CMD        the block must equal CMD's stdout exactly (trailing
  ...                           whitespace trimmed per line, trailing blank lines ignored).
  ```                           CMD must exit 0 too (its last command: no pipefail here, so
                                `./run bad 2>&1 | grep error` works). Mark only deterministic output.

  ```cpp quote-of: FILE:SYMBOL  code quoted from the project: its lines (comments and whitespace
  ...                           aside) appear in FILE one after another, inside the definition
  ```                           that starts at a line naming SYMBOL (up to the next line that
                                starts with "}"); a line "..." skips lines, "..." inside a line
                                matches anything. FILE alone: anywhere in FILE.
  ```text illustrative: REASON  an example that is not compared, and the reason.
  ```text diagram               a drawing, a formula or arithmetic worked by hand.
  ```cpp sketch                 code written for the book that quotes nothing.
  Every other fenced block (no info string, or only a language) is an error: a reader must be
  able to tell what a block is, and a checker what to do with it.
  Formulas are TeX math, not blocks: $...$ inline, $$...$$ on lines of their own. The static
  checks read them as prose (nothing in them runs); tools/book_render.py makes them MathML.

Static checks (no command runs for these):
  * code references  `file.cpp:function`, `file.h:symbol`, `tools/x.py:function`: the file
    exists and the identifier appears in it as a whole word (a qualified name such as
    Net::forward or Qwen2.hidden: every part does). A bare file name is looked up in the
    repository when it is not at the root (gen_model.cpp -> tools/gen_model.cpp).
  * no line-number references: `net.cpp:123`, `net.cpp#L12`, `#L12`, "line 42 of net.cpp".
    Blocks whose info string starts with text, log, console or output are exempt (they are
    captured output: compiler errors and tracebacks legitimately carry line numbers).
  * flags and subcommands, in `sh try` commands, in output-of commands and in inline code:
      - `./run WORD` with WORD a bare lowercase word: "WORD" is a string literal in a
        top-level .cpp file (the subcommand dispatch);
      - every -f / --flag given to a Lantern program (./run, build/..., tools/..., tests/...,
        python3 tools/...) appears as a whole token in the sources; inline code that is just
        a flag (`--top-k`, `-vv`, `--temp 0.8`) is checked the same way; flags of other
        programs (git, curl, grep...) are not checked;
      - `make TARGET`: TARGET is a rule in the Makefile.
  * names in prose: inline code that is an identifier (`matmul_many`, `KVView`, `n_kv_heads`),
    a qualified name (`Net::forward`, `cfg.arch`) or a call (`matmul_many()`) names something
    of Lantern's: every part appears as a whole word in one source file (.cpp .h .cu .py .sh
    .js .mjs .html, the Makefile), or in the chapter's own commands and their outputs. Names of
    other programs are listed in ALLOWED_NAMES, each with where it is from (--list-allowed).
    Flags, paths, commands, numbers, file names, token pieces with their space (` thee`), hex
    bytes (`E4`) and one-letter math (`t`, `q_t`) are not names.
  * claims: "about N lines of C++" is within a tenth of the engine's .cpp/.h/.cu line count;
    "the try block above" (or output-of, quote-of; above or below) has such a block on that
    side in the same section.
  * relative links: the target exists.
  (`file.cpp:function`, `name.h:symbol`, `x.py:f` are placeholders that explain the convention
  and are not checked.) A link to a chapter that is not written yet
    (NN-name.md) is only a warning.

A command that names models/qwen2.5-0.5b (1 GB, made only by LANTERN_BIG_MODEL=1 make models)
is skipped with a warning when that folder is missing.

Commands see the environment variable MODEL: the default model, trained/kjv when it
exists, else models/tiny (unless MODEL is already set).

Usage:
  /usr/bin/python3 tools/book_check.py                  check every chapter, run everything
  /usr/bin/python3 tools/book_check.py --no-run         static checks only
  /usr/bin/python3 tools/book_check.py --chapter book/03-loading.md [--chapter ...]
  /usr/bin/python3 tools/book_check.py --list           print every command the book runs
  /usr/bin/python3 tools/book_check.py --book-dir DIR   check another folder of chapters
  /usr/bin/python3 tools/book_check.py --list-allowed   the other programs' names prose may use
Exit status: 0 when nothing is wrong, 1 otherwise. Every problem is reported as
"FILE:LINE: what (block, command, expected vs got)".
"""
import argparse
import difflib
import glob
import os
import re
import shlex
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from book_source import (ROOT, EXEMPT_INFO, CODE_REF, LINE_REFS, LINK,  # noqa: E402
                         CHAPTER_NAME, SHORT_FLAG, LONG_FLAG, BLOCK_KINDS, parse, inline_code,
                         commands_of, kind_of, check_quote, Sources)



# Folders too big to make on every `make test`: a command that names one that is not there is
# skipped with a warning instead of failing (its static checks still apply).
OPTIONAL = {"models/qwen2.5-0.5b": "LANTERN_BIG_MODEL=1 make models"}


def missing_optional(cmd):
    for path, how in OPTIONAL.items():
        if re.search(r"(?<![\w/.-])" + re.escape(path) + r"(?![\w.-])", cmd) and \
                not os.path.exists(os.path.join(ROOT, path, "model.safetensors")):
            return "skipped `%s`: %s is not there (%s makes it)" % (cmd, path, how)
    return None


def default_model():
    if os.path.exists(os.path.join(ROOT, "trained/kjv/model.safetensors")):
        return "trained/kjv"
    return "models/tiny"


# ----------------------------------------------------------------------------- checks

class Report:
    def __init__(self):
        self.errors, self.warnings = [], []
        self.seen = set()

    def error(self, where, msg):
        self.errors.append("%s: %s" % (where, msg))
        print("ERROR %s: %s" % (where, msg), flush=True)

    def warn(self, where, msg, once=None):
        if once is not None:          # one warning per key (a chapter linking a missing one often)
            if once in self.seen:
                return
            self.seen.add(once)
        self.warnings.append("%s: %s" % (where, msg))
        print("warn  %s: %s" % (where, msg), flush=True)


def is_lantern_program(words):
    """Does this simple command run one of Lantern's own programs? Returns the index of the
    first argument (after the program), or None."""
    i = 0
    while i < len(words) and re.match(r"^[A-Za-z_]\w*=", words[i]):   # VAR=value prefixes
        i += 1
    if i >= len(words):
        return None
    w = words[i]
    if w in ("time", "env", "nice"):
        return _offset(words, i + 1)
    if w == "timeout":
        return _offset(words, i + 2)
    prog = w[2:] if w.startswith("./") else w
    if prog == "run" and w == "./run":
        return i + 1
    if re.match(r"^(build|tools|tests)/", prog):
        return i + 1
    if re.match(r"^(/usr/bin/)?python3?$|^bash$|^sh$|^node$", prog) and i + 1 < len(words):
        nxt = words[i + 1][2:] if words[i + 1].startswith("./") else words[i + 1]
        if re.match(r"^(tools|tests)/", nxt):
            return i + 2
    return None


def _offset(words, start):
    r = is_lantern_program(words[start:])
    return None if r is None else start + r


def split_simple_commands(cmd):
    """Words of each simple command of a shell line (split at | && || ; and redirections)."""
    try:
        lex = shlex.shlex(cmd, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        tokens = list(lex)
    except ValueError:
        tokens = cmd.split()
    out, cur, skip_next = [], [], False
    for t in tokens:
        if skip_next:
            skip_next = False
            continue
        if t in ("|", "||", "&&", ";", "&", "(", ")"):
            if cur:
                out.append(cur)
            cur = []
        elif re.fullmatch(r"[<>]+&?|&>", t):
            skip_next = True          # the redirection target
        else:
            cur.append(t)
    if cur:
        out.append(cur)
    return out


def check_command_words(cmd, src, rep, where):
    """Flags, ./run subcommands and make targets of one shell command line."""
    # ./run SUBCOMMAND: on the raw text, so a quoted prompt is never taken for a subcommand.
    for m in re.finditer(r"(?:^|[\s;|&(])\./run\s+([a-z][a-z0-9_-]*)(?=\s|$|[;|&)])", cmd):
        word = m.group(1)
        if os.path.exists(os.path.join(ROOT, word)):
            continue
        if '"%s"' % word not in src.top_cpp:
            rep.error(where, "`./run %s`: no subcommand \"%s\" in the top-level .cpp files (command: %s)"
                      % (word, word, cmd))
    for words in split_simple_commands(cmd):
        if words and words[0] == "make":
            for w in words[1:]:
                if w.startswith("-") or "=" in w:
                    continue
                if w not in src.make_targets:
                    rep.error(where, "`make %s`: the Makefile has no target \"%s\" (command: %s)" % (w, w, cmd))
            continue
        start = is_lantern_program(words)
        if start is None:
            continue
        for w in words[start:]:
            flag = w.split("=", 1)[0]
            if LONG_FLAG.match(flag) or SHORT_FLAG.match(flag):
                if not src.has_flag(flag):
                    rep.error(where, "flag %s does not appear in the sources (command: %s)" % (flag, cmd))


def check_inline(span, src, rep, where):
    words = span.split()
    if not words:
        return
    if LONG_FLAG.match(words[0].split("=", 1)[0]) or (SHORT_FLAG.match(words[0]) and len(words) <= 2):
        for w in words:
            flag = w.split("=", 1)[0].rstrip(",")
            if LONG_FLAG.match(flag) or SHORT_FLAG.match(flag):
                if not src.has_flag(flag):
                    rep.error(where, "flag %s (inline code `%s`) does not appear in the sources" % (flag, span))
        return
    if re.match(r"^(\./run|make|build/|tools/|tests/|(/usr/bin/)?python3? (tools|tests)/|bash (tools|tests)/)", span):
        check_command_words(span, src, rep, where)


# ----------------------------------------------------------------------------- names in prose

# Names of other programs that the prose names in backticks, with where each is from: they are
# in no Lantern source file, so the check below would refuse them. Keep this short: a name that
# sounds like the engine's belongs in the engine (or out of the prose), not here.
ALLOWED_NAMES = {
    "Qwen2RotaryEmbedding": "transformers",
    "tool_calls": "chat template",
    "window.reportError": "browser API",
    "get_key": "llama.cpp",
    "gguf_find_key": "llama.cpp",
    "vpermw": "x86 instruction",
    "he": "BPE token",
}

# `name`, `Type::member`, `cfg.arch`, `p->next`, `f()`, `f(x, y)`: the name (the callee of a call).
NAME = re.compile(r"^(~?[A-Za-z_]\w*(?:(?:::|\.|->)~?[A-Za-z_]\w*)*)(\(.*\))?$")
# The last part of a dotted span that makes it a file name (`config.json`), not a member.
FILE_EXT = set("json jsonl cpp h hpp c cu cuh py sh js mjs lua md html css txt csv log svg png "
               "safetensors gguf bin o a so gz tar zip toml yaml yml".split())


def name_in_span(raw):
    """The identifier a code span names, as its parts (`Net::forward` -> [Net, forward]), or
    None when the span is something else: a flag, path, command, number, file name, a token
    with its leading space, a byte in hex (`E4`, `bd88`), math (`t`, `q_t`)."""
    span = raw.strip()
    if span != raw or not span.isascii():
        return None
    m = NAME.match(span)
    if not m:
        return None
    name = m.group(1)
    if m.group(2) and m.group(2).count("(") != m.group(2).count(")"):
        return None
    parts = [p.lstrip("~") for p in re.split(r"::|\.|->", name)]
    if "." in name and parts[-1].lower() in FILE_EXT:
        return None
    if len(parts) > 1:            # `blk.N.ffn_down`: N stands for a layer's number
        parts = [p for p in parts if not re.fullmatch(r"[A-Z]", p)]
    if len(name) == 1 or re.fullmatch(r"[A-Za-z]_[A-Za-z0-9]", name):
        return None
    if re.fullmatch(r"[0-9A-Fa-f]{2}", name) or re.fullmatch(r"(?=.*\d)[0-9a-fA-F]{4}", name):
        return None
    return parts


def check_name(raw, src, rep, where, local):
    """A name the prose mentions (`matmul_many`, `KVView`, `Net::forward`, `cfg.arch`) must be
    Lantern's: every part appears as a whole word in one source file (.cpp, .h, .cu, .py, .sh,
    .js, .mjs, .html, the Makefile), or the chapter's own commands and their outputs name it
    (local: a mutant's name, a column of a printed table), or ALLOWED_NAMES lists it."""
    parts = name_in_span(raw)
    if parts is None:
        return
    name = raw.strip().split("(", 1)[0]
    if name in ALLOWED_NAMES:
        src.allowed_used.add(name)
        return
    if all(p in local for p in parts):
        return
    if any(all(p in words for p in parts) for words in src.names_by_file.values()):
        return
    missing = [p for p in parts if p not in src.names]
    what = "\"%s\" appears in no source file" % missing[0] if missing else \
        "no source file has all of %s" % ", ".join(parts)
    rep.error(where, "name `%s`: %s (a name of another program goes in book_check.py's "
              "ALLOWED_NAMES; --list-allowed prints it)" % (name, what))


# Claims about the code that a cheap look at the tree can check.
ENGINE_SIZE = re.compile(r"\babout ([\d,]+) lines of C\+\+|约 ?([\d,]+) 行 C\+\+")
BLOCK_POINTER = re.compile(r"\bthe (sh try|try|output-of|output|quote-of|quoted) blocks? (above|below)\b")


def engine_cpp_lines(src):
    """Lines of the engine's C++ (.cpp, .h, .cu of tools/file_map.py's engine folders)."""
    if src.engine_lines is None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import file_map
        src.engine_lines = sum(src.read(f).count("\n") for f in file_map.engine_files()
                               if re.search(r"\.(cpp|h|cu)$", f))
    return src.engine_lines


def check_claims(line, src, rep, where):
    """"about N lines of C++": within a tenth of what wc -l counts over the engine."""
    for m in ENGINE_SIZE.finditer(line):
        said, got = int((m.group(1) or m.group(2)).replace(",", "")), engine_cpp_lines(src)
        if abs(said - got) > got / 10:
            rep.error(where, "\"%s\": the engine's .cpp, .h and .cu files hold %d lines" % (m.group(0), got))


def check_block_pointers(prose, blocks, rep, rel):
    """"the try block above" (in prose or in a block's info string) points at a block of that
    kind in the same section, on that side."""
    kinds = {"sh try": "try", "try": "try", "output-of": "output", "output": "output",
             "quote-of": "quote", "quoted": "quote"}
    heads = [n for n, l in prose if re.match(r"^#{1,6} ", l)]
    end = max([n for n, _ in prose] + [b.line + len(b.lines) + 1 for b in blocks] + [0]) + 1
    for n, l in list(prose) + [(b.line, b.info) for b in blocks]:
        for m in BLOCK_POINTER.finditer(l):
            kind, side = kinds[m.group(1)], m.group(2)
            lo = max([h for h in heads if h <= n] or [0])
            hi = min([h for h in heads if h > n] or [end])
            ok = any(kind_of(b.info)[0] == kind and lo < b.line < hi and
                     (b.line < n if side == "above" else b.line > n) for b in blocks)
            if not ok:
                rep.error("%s:%d" % (rel, n), "\"%s\": no %s block %s it in this section"
                          % (m.group(0), m.group(1), side))


PLACEHOLDER_FILES = {"file", "name", "x", "foo"}   # `file.cpp:function` explains the convention


def check_refs(text, src, rep, where, line_refs=True):
    for m in CODE_REF.finditer(text):
        fname, ident = m.group(1), m.group(2)
        if os.path.basename(fname).split(".")[0] in PLACEHOLDER_FILES:
            continue
        path = src.resolve(fname)
        if path is None:
            rep.error(where, "code reference %s:%s: no file %s in the repository" % (fname, ident, fname))
            continue
        body = src.read(path)
        for part in re.split(r"::|\.", ident):
            if not re.search(r"(?<![\w])" + re.escape(part) + r"(?!\w)", body):
                rep.error(where, "code reference %s:%s: \"%s\" does not appear in %s" % (fname, ident, part, path))
                break
    if line_refs:
        for pat, what in LINE_REFS:
            for m in pat.finditer(text):
                rep.error(where, "line-number reference \"%s\" (%s): refer to code as file.cpp:function"
                          % (m.group(0), what))


def check_links(text, chapter, rep, where, known_chapters):
    for m in LINK.finditer(text):
        target = m.group(1) or m.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if not path:
            continue
        full = os.path.normpath(os.path.join(os.path.dirname(chapter), path))
        if os.path.exists(full):
            continue
        base = os.path.basename(path)
        if os.path.dirname(path) == "" and CHAPTER_NAME.match(base):
            rep.warn(where, "link to %s: that chapter is not written yet (further links to it not reported)"
                     % path, once=(where.rsplit(":", 1)[0], path))
        else:
            rep.error(where, "link to %s: no such file (%s)" % (target, os.path.relpath(full, ROOT)))


# What each command printed when an English chapter ran it. A Chinese chapter's blocks are its
# English twin's byte for byte (tools/book_twin.py checks that), so when the whole book is
# checked its commands are not run a second time: their outputs are compared with this run's.
# A Chinese chapter checked alone (--chapter book/zh/...) runs its commands itself.
RAN = {}


def run_once(cmd, timeout, env, pipefail, reuse):
    if reuse and (cmd, pipefail) in RAN:
        return RAN[(cmd, pipefail)]
    r = run_shell(cmd, timeout, env, pipefail)
    RAN.setdefault((cmd, pipefail), r)
    return r


def run_shell(cmd, timeout, env, pipefail=True):
    t0 = time.time()
    try:
        r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd] if pipefail else ["bash", "-c", cmd], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, b"", b"", time.time() - t0
    rc = 0 if r.returncode == 141 else r.returncode   # SIGPIPE from `| head`: not a failure
    return rc, r.stdout, r.stderr, time.time() - t0


def tail(b, n=8):
    if not b.strip():
        return "      | (nothing on stderr)"
    lines = b.decode("utf-8", "replace").rstrip("\n").split("\n")
    return "\n".join("      | " + l for l in lines[-n:])


def normalize(text):
    lines = [l.rstrip() for l in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def shown_path(path):
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


def check_chapter(path, src, rep, args, env, stats, known_chapters, reuse=False):
    rel = shown_path(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    blocks, prose = parse(text)
    local = set()                 # the words of the chapter's commands and their outputs
    for b in blocks:
        kind, cmd = kind_of(b.info)
        if kind in ("try", "output"):
            local.update(re.findall(r"[A-Za-z_]\w*", (cmd or "") + "\n" + "\n".join(b.lines)))
    for n, line in prose:
        where = "%s:%d" % (rel, n)
        check_refs(line, src, rep, where)
        check_links(line, path, rep, where, known_chapters)
        for span in inline_code(line):
            check_inline(span, src, rep, where)
        for raw in inline_code(line, strip=False):
            check_name(raw, src, rep, where, local)
        check_claims(line, src, rep, where)
    check_block_pointers(prose, blocks, rep, rel)
    for b in blocks:
        kind, cmd = kind_of(b.info)
        where = "%s:%d" % (rel, b.line)
        exempt = b.info.split(" ")[0].lower() in EXEMPT_INFO if b.info else False
        if kind == "output":
            check_command_words(cmd, src, rep, where)
            check_refs(cmd, src, rep, where)
            if args.list:
                print("%s  [output-of] %s" % (where, cmd))
            if args.no_run or args.list:
                continue
            skip = missing_optional(cmd)
            if skip:
                rep.warn(where, skip)
                continue
            # No pipefail here: `./run ... 2>&1 | grep error` shows an error message on purpose;
            # a wrong output is caught by the comparison anyway.
            rc, out, err, dt = run_once(cmd, args.timeout, env, False, reuse)
            stats["outputs"] += 1
            if rc is None:
                rep.error(where, "output-of block: `%s` did not finish within %d s" % (cmd, args.timeout))
                continue
            if rc != 0:
                more = "" if not out.strip() else "\n    stdout:\n%s" % tail(out)
                rep.error(where, "output-of block: `%s` exited %d (expected 0); stderr:\n%s%s"
                          % (cmd, rc, tail(err), more))
                continue
            want, got = normalize("\n".join(b.lines)), normalize(out.decode("utf-8", "replace"))
            if want != got:
                diff = list(difflib.unified_diff(want, got, "expected (book)", "got (stdout)", lineterm="", n=1))
                shown = "\n".join("      " + d for d in diff[:40])
                more = "\n      ... (%d more diff lines)" % (len(diff) - 40) if len(diff) > 40 else ""
                rep.error(where, "output-of block: the output of `%s` differs from the book:\n%s%s"
                          % (cmd, shown, more))
            elif args.verbose:
                print("ok    %s: output of `%s` (%.1f s)" % (where, cmd, dt))
            continue
        if not exempt:
            for k, line in enumerate(b.lines):
                check_refs(line, src, rep, "%s:%d" % (rel, b.line + 1 + k))
        if kind == "":
            rep.error(where, "a block with info string \"%s\": %s" % (cmd, BLOCK_KINDS))
        elif kind == "illustrative" and len(cmd.split()) < 3:
            rep.error(where, "an illustrative block must say why it is not checked (a few words "
                      "after \"illustrative:\")")
        elif kind == "quote":
            check_quote(b, cmd, src, rep, where)
        if kind != "try":
            continue
        for n, c in commands_of(b):
            cw = "%s:%d" % (rel, n)
            check_command_words(c, src, rep, cw)
            if args.list:
                print("%s  [try] %s" % (cw, c))
            if args.no_run or args.list:
                continue
            skip = missing_optional(c)
            if skip:
                rep.warn(cw, skip)
                continue
            rc, out, err, dt = run_once(c, args.timeout, env, True, reuse)
            stats["commands"] += 1
            if rc is None:
                rep.error(cw, "sh try block (line %d): `%s` did not finish within %d s" % (b.line, c, args.timeout))
            elif rc != 0:
                more = "" if not out.strip() else "\n    stdout:\n%s" % tail(out)
                rep.error(cw, "sh try block (line %d): `%s` exited %d (expected 0); stderr:\n%s%s"
                          % (b.line, c, rc, tail(err), more))
            elif args.verbose:
                print("ok    %s: `%s` (%.1f s)" % (cw, c, dt))


# ----------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description="Check the Lantern book.")
    ap.add_argument("--chapter", action="append", help="check only this chapter (repeatable)")
    ap.add_argument("--no-run", action="store_true", help="static checks only; run no command")
    ap.add_argument("--list", action="store_true", help="print the commands the book runs, run nothing")
    ap.add_argument("--verbose", action="store_true", help="also print what passed")
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("BOOK_CHECK_TIMEOUT", "300")),
                    help="seconds one command may take (default 300)")
    ap.add_argument("--book-dir", default=os.path.join(ROOT, "book"), help="the folder of chapters")
    ap.add_argument("--list-allowed", action="store_true",
                    help="print the names of other programs the prose may name (ALLOWED_NAMES)")
    args = ap.parse_args()
    if args.list_allowed:
        for name, what in sorted(ALLOWED_NAMES.items(), key=lambda kv: (kv[1], kv[0].lower())):
            print("%-24s %s" % (name, what))
        return 0
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # `book_check.py --list | head` ends quietly
    depth = int(os.environ.get("BOOK_CHECK_DEPTH", "0"))
    if depth >= 2 and not (args.no_run or args.list):
        print("book_check.py: called from a chapter that a chapter's command checks: refusing to recurse")
        return 1
    os.environ["BOOK_CHECK_DEPTH"] = str(depth + 1)
    args.book_dir = os.path.abspath(args.book_dir)
    src = Sources()

    # The Chinese chapters (book/zh/) are checked like the English ones, after them; then the
    # twin check compares each with its English twin (tools/book_twin.py).
    zh_dir = os.path.join(args.book_dir, "zh")
    chapters = [os.path.abspath(c) for c in args.chapter] if args.chapter else \
        sorted(glob.glob(os.path.join(args.book_dir, "*.md"))) + sorted(glob.glob(os.path.join(zh_dir, "*.md")))
    for c in chapters:
        if not os.path.isfile(c):
            print("ERROR %s: no such chapter" % c)
            return 1
    env = dict(os.environ)
    env.setdefault("MODEL", default_model())
    env.setdefault("NO_COLOR", "1")
    # The book shows the checkers' English output; on a machine set to Chinese they would
    # answer in Chinese (chapters/checker_common.h), so the commands run in the C locale.
    if next((env.get(v) for v in ("LC_ALL", "LC_MESSAGES", "LANG") if env.get(v)), "").startswith("zh"):
        env["LC_ALL"] = "C.UTF-8"
    rep = Report()
    stats = {"commands": 0, "outputs": 0}
    known = set(os.path.basename(c) for c in glob.glob(os.path.join(args.book_dir, "*.md")))
    print("book check: %d chapters, MODEL=%s" % (len(chapters), env["MODEL"]), flush=True)
    per_chapter = {}
    # The map of files (README.md and chapter 1) against the tree: tools/file_map.py.
    # Not for another folder of chapters (--book-dir: the self-test's planted one).
    if args.book_dir == os.path.abspath(os.path.join(ROOT, "book")):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import file_map
        for problem in file_map.check():
            rep.error(problem.split(":", 1)[0], problem.split(":", 1)[1].strip())
        import records       # the measurement records and the appendix tables made from them
        for problem in records.check():
            rep.error(problem.split(": ", 1)[0], problem.split(": ", 1)[1])
    if args.book_dir == os.path.abspath(os.path.join(ROOT, "book")) and not args.chapter:
        for problem in __import__("book_limits").check():     # lengths and loads: tools/book_limits.py
            rep.error(*problem.partition(": ")[::2])
    for c in chapters:
        before, t0 = len(rep.errors), time.time()
        check_chapter(c, src, rep, args, env, stats, known, reuse=os.path.dirname(c) == zh_dir)
        per_chapter[shown_path(c)] = (len(rep.errors) - before, time.time() - t0)
    if args.list:
        return 0
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import book_twin
    if args.chapter:
        twins = []
        for c in chapters:
            other = book_twin.english_twin_in(args.book_dir, c)
            if other and os.path.isfile(other):
                twins += book_twin.compare(*((other, c) if book_twin.is_chinese(c) or os.path.dirname(c) == zh_dir
                                             else (c, other)))
    elif os.path.isdir(zh_dir):     # a folder of chapters with a Chinese edition (not a planted one)
        twins = book_twin.check_all(args.book_dir)
        twins += __import__("book_index").problems(args.book_dir)   # the index of terms is current
    else:
        twins = []
    import book_zh      # the English glosses in the Chinese prose, counted per chapter
    twins += book_zh.problems(args.book_dir, out=sys.stdout) if os.path.isdir(zh_dir) and not args.chapter else []
    for problem in twins:
        where, _, what = problem.partition(": ")
        rep.error(where, what)
    import book_selfcheck       # each chapter's "Check yourself" questions
    for problem in book_selfcheck.check(chapters, args.book_dir):
        rep.error(*problem.split(": ", 1))
    if not args.chapter:          # the allow-list stays short: only names the book needs
        for name in sorted(ALLOWED_NAMES):
            parts = [p for p in re.split(r"::|\.|->", name)]
            if any(all(p in words for p in parts) for words in src.names_by_file.values()):
                rep.error("tools/book_check.py", "ALLOWED_NAMES lists `%s`, which the sources have: "
                          "remove it from the list" % name)
            elif name not in src.allowed_used and args.book_dir == os.path.join(ROOT, "book"):
                rep.error("tools/book_check.py", "ALLOWED_NAMES lists `%s`, which no chapter names: "
                          "remove it from the list" % name)
    for c, (n, dt) in per_chapter.items():
        print("%s %-40s %5.0f s%s" % ("ok  " if n == 0 else "FAIL", c, dt, "" if n == 0 else "  (%d problems)" % n))
    print("book check: %d commands run, %d outputs compared, %d twin problems, %d errors, %d warnings"
          % (stats["commands"], stats["outputs"], len(twins), len(rep.errors), len(rep.warnings)))
    return 1 if rep.errors else 0


if __name__ == "__main__":
    sys.exit(main())
