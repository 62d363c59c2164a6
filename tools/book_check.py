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
  /usr/bin/python3 tools/book_check.py --render build/book    HTML with pandoc (make book)
  /usr/bin/python3 tools/book_check.py --book-dir DIR   check another folder of chapters
Exit status: 0 when nothing is wrong, 1 otherwise. Every problem is reported as
"FILE:LINE: what (block, command, expected vs got)".
"""
import argparse
import difflib
import glob
import html
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODE_EXT = r"(?:cpp|h|hpp|c|cu|cuh|py|sh|js|lua)"
EXEMPT_INFO = ("text", "log", "console", "output")

# `file.ext:identifier` (optionally with a directory). The identifier may be qualified.
CODE_REF = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\." + CODE_EXT +
                      r"):([A-Za-z_~][\w~]*(?:(?:::|\.)[A-Za-z_~][\w~]*)*)")
LINE_REFS = [
    (re.compile(r"(?<![\w/.-])(?:[\w.-]+/)*[\w.-]+\." + CODE_EXT + r"(?::|#L?)\d+"), "file:line"),
    (re.compile(r"#L\d+\b"), "#L anchor"),
    (re.compile(r"(?<!\w):L\d+\b"), ":L line"),
    (re.compile(r"\blines?\s+\d+(?:\s*[-\u2013,]\s*\d+)*\s+(?:of|in)\s+`?(?:[\w.-]+/)*[\w.-]+\." + CODE_EXT
                + r"\b", re.I), "'line N of file'"),
]
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*(.*?)\s*$")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
CHAPTER_NAME = re.compile(r"^\d\d-[\w-]+\.md$")
SHORT_FLAG = re.compile(r"^-[A-Za-z][A-Za-z0-9]{0,3}$")
LONG_FLAG = re.compile(r"^--[A-Za-z][\w-]*$")


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


# ----------------------------------------------------------------------------- parsing

class Block:
    def __init__(self, info, line, lines):
        self.info, self.line, self.lines = info, line, lines   # line: the opening fence, 1-based


def parse(text):
    """Splits a chapter into fenced blocks and the prose lines around them.
    Returns (blocks, prose) where prose is a list of (line_number, text) outside fences."""
    blocks, prose = [], []
    lines = text.split("\n")
    i = 0
    in_comment = False
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m and not in_comment:
            fence, info = m.group(2), m.group(3)
            start, body = i + 1, []
            i += 1
            while i < len(lines):
                close = re.match(r"^ {0,3}(" + re.escape(fence[0]) + "{%d,})\\s*$" % len(fence), lines[i])
                if close:
                    break
                body.append(lines[i])
                i += 1
            blocks.append(Block(info, start, body))
            i += 1
            continue
        line = lines[i]
        # HTML comments are not checked (authors may park notes there).
        if "<!--" in line:
            in_comment = "-->" not in line.split("<!--", 1)[1]
            line = line.split("<!--", 1)[0]
        elif in_comment:
            if "-->" in line:
                in_comment = False
                line = line.split("-->", 1)[1]
            else:
                line = ""
        prose.append((i + 1, line))
        i += 1
    return blocks, prose


def inline_code(line):
    """The `code spans` of one line of prose (single or multiple backticks)."""
    spans, i = [], 0
    while True:
        m = re.search(r"`+", line[i:])
        if not m:
            return spans
        ticks = m.group(0)
        start = i + m.end()
        end = line.find(ticks, start)
        if end < 0:
            return spans
        spans.append(line[start:end].strip())
        i = end + len(ticks)


def commands_of(block):
    """(line_number, command) for each command of a `sh try` block."""
    out, pending, first = [], "", None
    for k, raw in enumerate(block.lines):
        line = raw.rstrip()
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if first is None:
            first = block.line + 1 + k
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append((first, (pending + line).strip()))
        pending, first = "", None
    if pending.strip():
        out.append((first, pending.strip()))
    return out


def kind_of(info):
    if re.fullmatch(r"sh\s+try", info):
        return "try", None
    m = re.fullmatch(r"text\s+output-of:\s*(.+)", info)
    if m:
        return "output", m.group(1).strip()
    return "other", None


# ----------------------------------------------------------------------------- the sources

class Sources:
    def __init__(self):
        r = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True)
        files = [f for f in r.stdout.split("\n") if f and "node_modules/" not in f]
        if not files:  # not a git checkout: walk the tree
            for d, sub, names in os.walk(ROOT):
                sub[:] = [s for s in sub if not s.startswith(".") and s not in ("build", "models", "node_modules")]
                files += [os.path.relpath(os.path.join(d, n), ROOT) for n in names]
        self.files = sorted(set(f for f in files if os.path.isfile(os.path.join(ROOT, f))))
        src = re.compile(r"(^|/)(Makefile|[^/]+\.(cpp|h|hpp|c|cu|cuh|py|sh|js|lua))$")
        texts = []
        for f in self.files:
            # The book itself and the checker's self-test (planted mistakes) are not sources.
            if f.startswith("book/") or f == "tests/check_book.sh" or not src.search(f):
                continue
            t = self.read(f)
            if f == "tools/book_check.py":  # only its own flags, not the examples in its text
                t = " ".join(re.findall(r"add_argument\(\"(--?[\w-]+)\"", t))
            texts.append(t)
        self.corpus = "\n".join(texts)
        self.top_cpp = "\n".join(self.read(f) for f in self.files if "/" not in f and f.endswith(".cpp"))
        self.make_targets = set()
        mk = self.read("Makefile")
        for m in re.finditer(r"^([\w./%$() -]+?)\s*:(?!=)", mk, re.M):
            self.make_targets.update(m.group(1).split())
        self._flag_cache = {}

    def read(self, rel):
        try:
            with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def resolve(self, name):
        """A file named in a code reference: the path as given, else a unique basename match."""
        if os.path.isfile(os.path.join(ROOT, name)):
            return name
        if "/" not in name:
            hits = [f for f in self.files if os.path.basename(f) == name]
            if len(hits) == 1:
                return hits[0]
        return None

    def has_flag(self, flag):
        if flag not in self._flag_cache:
            pat = re.compile(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])")
            self._flag_cache[flag] = bool(pat.search(self.corpus))
        return self._flag_cache[flag]


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


def check_chapter(path, src, rep, args, env, stats, known_chapters):
    rel = shown_path(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    blocks, prose = parse(text)
    for n, line in prose:
        where = "%s:%d" % (rel, n)
        check_refs(line, src, rep, where)
        check_links(line, path, rep, where, known_chapters)
        for span in inline_code(line):
            check_inline(span, src, rep, where)
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
            rc, out, err, dt = run_shell(cmd, args.timeout, env, pipefail=False)
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
            rc, out, err, dt = run_shell(c, args.timeout, env)
            stats["commands"] += 1
            if rc is None:
                rep.error(cw, "sh try block (line %d): `%s` did not finish within %d s" % (b.line, c, args.timeout))
            elif rc != 0:
                more = "" if not out.strip() else "\n    stdout:\n%s" % tail(out)
                rep.error(cw, "sh try block (line %d): `%s` exited %d (expected 0); stderr:\n%s%s"
                          % (b.line, c, rc, tail(err), more))
            elif args.verbose:
                print("ok    %s: `%s` (%.1f s)" % (cw, c, dt))


# ----------------------------------------------------------------------------- HTML

LUA_FILTER = r"""
local CODE_PATHS = __PATHS__
-- Links between chapters: x.md -> x.html. Links to the code: one level further up,
-- because the HTML lives in build/book/ instead of book/.
local code_ref = "^([%w_./-]+%.%a+):([%a_~][%w_:.~]*)$"
local code_ext = { cpp=1, h=1, hpp=1, c=1, cu=1, cuh=1, py=1, sh=1, js=1, lua=1 }
function Link(el)
  local t = el.target
  if t:match("^%a+:") or t:match("^#") then return el end
  local path, frag = t:match("^([^#]*)(.*)$")
  if path:match("%.md$") and not path:match("/") then
    el.target = path:gsub("%.md$", ".html") .. frag
  elseif not path:match("^img/") then
    el.target = "../" .. t
  end
  return el
end
function Code(el)
  local file, ident = el.text:match(code_ref)
  if file then
    local ext = file:match("%.(%a+)$")
    if code_ext[ext] then
      return pandoc.Link({el}, "../../" .. (CODE_PATHS[file] or file))
    end
  end
  return el
end
"""

CSS = """body{max-width:46em;margin:2em auto;padding:0 1em;font:17px/1.55 Georgia,serif;color:#222}
code,pre{font:14px/1.4 ui-monospace,Menlo,Consolas,monospace}
pre{background:#f6f6f2;padding:.7em 1em;overflow-x:auto;border-left:3px solid #d9c98a}
pre.try{border-left-color:#6a9f5c} div.cmd{font:13px monospace;color:#666;margin-top:1em;white-space:pre-wrap}
a{color:#8a5a00} nav{margin:2em 0;padding-top:1em;border-top:1px solid #ddd;font-size:15px}
table{border-collapse:collapse} td,th{border:1px solid #ccc;padding:.2em .5em}
"""


def render(args, src):
    out = os.path.join(ROOT, args.render) if not os.path.isabs(args.render) else args.render
    os.makedirs(out, exist_ok=True)
    if not shutil.which("pandoc"):
        print("make book: pandoc is missing (make deps installs it)")
        return 1
    chapters = sorted(glob.glob(os.path.join(args.book_dir, "*.md")))
    # Bare file names in code references (gen_model.cpp) resolve to their real paths.
    paths = {}
    for f in src.files:
        paths.setdefault(os.path.basename(f), f)
        paths[f] = f
    lua = LUA_FILTER.replace("__PATHS__", "{" + ",".join('["%s"]="%s"' % (k, v) for k, v in paths.items()) + "}")
    with open(os.path.join(out, "links.lua"), "w") as f:
        f.write(lua)
    with open(os.path.join(out, "book.css"), "w") as f:
        f.write(CSS)
    img = os.path.join(args.book_dir, "img")
    if os.path.isdir(img):
        shutil.copytree(img, os.path.join(out, "img"), dirs_exist_ok=True)
    for k, path in enumerate(chapters):
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path, encoding="utf-8") as f:
            text = f.read()
        title = next((l.lstrip("# ").strip() for l in text.split("\n") if l.startswith("# ")), name)
        # Fence info strings become classes pandoc understands; output blocks name their command.
        lines = []
        for line in text.split("\n"):
            m = FENCE.match(line)
            if m and m.group(3):
                kind, cmd = kind_of(m.group(3))
                if kind == "try":
                    line = m.group(1) + m.group(2) + " {.sh .try}"
                elif kind == "output":
                    lines += ["```{=html}", '<div class="cmd">$ %s</div>' % html.escape(cmd), "```", ""]
                    line = m.group(1) + m.group(2) + " {.text .output}"
                else:
                    line = m.group(1) + m.group(2) + " " + m.group(3).split()[0]
            lines.append(line)
        nav = ['<nav>']
        if k > 0:
            nav.append('<a href="%s.html">&larr; previous</a> &middot; ' % os.path.splitext(os.path.basename(chapters[k - 1]))[0])
        nav.append('<a href="index.html">contents</a>')
        if k + 1 < len(chapters):
            nav.append(' &middot; <a href="%s.html">next &rarr;</a>' % os.path.splitext(os.path.basename(chapters[k + 1]))[0])
        nav.append('</nav>')
        navfile = os.path.join(out, ".nav.html")
        with open(navfile, "w") as f:
            f.write("".join(nav))
        target = os.path.join(out, name + ".html")
        r = subprocess.run(["pandoc", "--from", "markdown", "--to", "html5", "--standalone",
                            "--lua-filter", os.path.join(out, "links.lua"), "--css", "book.css",
                            "--metadata", "pagetitle=" + title, "--include-after-body", navfile,
                            "-o", target], input="\n".join(lines), text=True, capture_output=True)
        if r.returncode != 0:
            print("make book: pandoc failed on %s:\n%s" % (os.path.relpath(path, ROOT), r.stderr))
            return 1
        if name.startswith("00-"):
            shutil.copyfile(target, os.path.join(out, "index.html"))
    if os.path.exists(os.path.join(out, ".nav.html")):
        os.remove(os.path.join(out, ".nav.html"))
    print("make book: %d chapters -> %s/index.html" % (len(chapters), os.path.relpath(out, ROOT)))
    return 0


# ----------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description="Check (or render) the Lantern book.")
    ap.add_argument("--chapter", action="append", help="check only this chapter (repeatable)")
    ap.add_argument("--no-run", action="store_true", help="static checks only; run no command")
    ap.add_argument("--list", action="store_true", help="print the commands the book runs, run nothing")
    ap.add_argument("--verbose", action="store_true", help="also print what passed")
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("BOOK_CHECK_TIMEOUT", "300")),
                    help="seconds one command may take (default 300)")
    ap.add_argument("--book-dir", default=os.path.join(ROOT, "book"), help="the folder of chapters")
    ap.add_argument("--render", metavar="OUT", help="render HTML into OUT with pandoc instead of checking")
    args = ap.parse_args()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # `book_check.py --list | head` ends quietly
    depth = int(os.environ.get("BOOK_CHECK_DEPTH", "0"))
    if depth >= 2 and not (args.no_run or args.list):
        print("book_check.py: called from a chapter that a chapter's command checks: refusing to recurse")
        return 1
    os.environ["BOOK_CHECK_DEPTH"] = str(depth + 1)
    args.book_dir = os.path.abspath(args.book_dir)
    src = Sources()
    if args.render:
        return render(args, src)

    chapters = [os.path.abspath(c) for c in args.chapter] if args.chapter else \
        sorted(glob.glob(os.path.join(args.book_dir, "*.md")))
    for c in chapters:
        if not os.path.isfile(c):
            print("ERROR %s: no such chapter" % c)
            return 1
    env = dict(os.environ)
    env.setdefault("MODEL", default_model())
    env.setdefault("NO_COLOR", "1")
    rep = Report()
    stats = {"commands": 0, "outputs": 0}
    known = set(os.path.basename(c) for c in glob.glob(os.path.join(args.book_dir, "*.md")))
    print("book check: %d chapters, MODEL=%s" % (len(chapters), env["MODEL"]), flush=True)
    per_chapter = {}
    for c in chapters:
        before, t0 = len(rep.errors), time.time()
        check_chapter(c, src, rep, args, env, stats, known)
        per_chapter[shown_path(c)] = (len(rep.errors) - before, time.time() - t0)
    if args.list:
        return 0
    for c, (n, dt) in per_chapter.items():
        print("%s %-40s %5.0f s%s" % ("ok  " if n == 0 else "FAIL", c, dt, "" if n == 0 else "  (%d problems)" % n))
    print("book check: %d commands run, %d outputs compared, %d errors, %d warnings"
          % (stats["commands"], stats["outputs"], len(rep.errors), len(rep.warnings)))
    return 1 if rep.errors else 0


if __name__ == "__main__":
    sys.exit(main())
