#!/usr/bin/python3
"""The book as text, and the project's sources as the book's checks read them.

tools/book_check.py (the checks and the command runs), tools/book_twin.py (the Chinese twins)
and tools/book_render.py (the HTML) share this one reading of a chapter: its fenced blocks
(parse, kind_of, commands_of), its inline code (inline_code), a quoted block matched against
the file it quotes (check_quote), and the repository's files and words (Sources).
The conventions themselves are described in tools/book_check.py.
"""
import os
import re
import subprocess

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


def code_spans(line):
    """(start, end, text) of each `code span` of one line of prose, start and end around the
    backticks, text inside them (single or multiple backticks; an unclosed run is prose)."""
    i = 0
    while True:
        m = re.search(r"`+", line[i:])
        if not m:
            return
        ticks = m.group(0)
        start = i + m.end()
        end = line.find(ticks, start)
        if end < 0:
            return
        yield i + m.start(), end + len(ticks), line[start:end]
        i = end + len(ticks)


def inline_code(line, strip=True):
    """The `code spans` of one line of prose; strip=False keeps the spaces inside the
    backticks (` thee` is a token, not a name)."""
    return [t.strip() if strip else t for _, _, t in code_spans(line)]


def without_inline_code(line):
    """One line of prose with each code span, backticks included, cut where it stands (a
    space in its place): a span's text elsewhere in the line stays prose."""
    out, i = [], 0
    for a, b, _ in code_spans(line):
        out += [line[i:a], " "]
        i = b
    return "".join(out) + line[i:]


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
    """What a fenced block is, from its info string: (kind, argument).
    try, output (argument: the command), quote (argument: FILE or FILE:SYMBOL),
    illustrative (argument: the reason it is not checked), diagram, sketch; "" when the
    block says nothing (an error: every block says what it is)."""
    if re.fullmatch(r"sh\s+try", info):
        return "try", None
    m = re.fullmatch(r"text\s+output-of:\s*(.+)", info)
    if m:
        return "output", m.group(1).strip()
    m = re.fullmatch(r"\w+\s+quote-of:\s*(\S+)", info)
    if m:
        return "quote", m.group(1)
    m = re.fullmatch(r"\w+\s+illustrative:\s*(.*)", info)
    if m:
        return "illustrative", m.group(1).strip()
    if re.fullmatch(r"text\s+diagram", info):
        return "diagram", None
    if re.fullmatch(r"\w+\s+sketch", info):
        return "sketch", None
    return "", info


BLOCK_KINDS = """every fenced block says what it is:
    ```sh try                       commands the checker runs
    ```text output-of: CMD          CMD's output, compared
    ```cpp quote-of: FILE:SYMBOL    code quoted from the project, compared with FILE
    ```text illustrative: REASON    an example not checked, and why (it needs a GPU, ...)
    ```text diagram                 a drawing, a formula, arithmetic worked by hand
    ```cpp sketch                   code written for the book, quoting nothing"""


# ----------------------------------------------------------------------------- quoted code

HASH_COMMENTS = ("py", "sh", "bash", "python", "make", "mk", "Makefile", "toml", "yaml", "cmake")


def strip_comment(line, ext):
    """One line of code without its comment: `# ...` for the shell, Python and the like
    (ext in HASH_COMMENTS; "#!" stays), `// ...` and `/* ... */` on one line for C, C++, CUDA
    and JavaScript (a "//" inside a string literal stays)."""
    if ext in HASH_COMMENTS:
        return re.sub(r"(^|\s)#(?![!]).*$", "", line)
    line = re.sub(r"/\*.*?\*/", "", line)
    quotes = 0
    for k in range(len(line) - 1):
        if line[k] == '"' and (k == 0 or line[k - 1] != "\\"):
            quotes += 1
        elif line[k:k + 2] == "//" and quotes % 2 == 0:
            return line[:k]
    return line


def code_line(line, ext):
    """One line of code as a quote is compared: comments dropped, whitespace collapsed."""
    return " ".join(strip_comment(line, ext).split())


def check_quote(block, target, src, rep, where):
    """The block's lines appear in FILE, after a line naming SYMBOL and before the end of
    that definition (the next line that starts with "}"), one after another; a line that is
    just "..." skips any number of lines, "..." inside a line matches anything there.
    Comments and whitespace do not count, so a quote may carry explanatory comments."""
    fname, _, sym = target.partition(":")
    path = src.resolve(fname)
    if path is None:
        rep.error(where, "quote-of %s: no file %s in the repository" % (target, fname))
        return
    ext = path.rsplit(".", 1)[-1]
    raw = src.read(path).split("\n")
    lines = []                       # (normalized, is_end_of_definition)
    for l in raw:
        n = code_line(l, ext)
        if n:
            lines.append((n, l.startswith("}")))
    want = []                        # ("gap", None) or ("line", regex, text)
    for l in block.lines:
        n = code_line(l, ext)
        if not n:
            continue
        if n == "...":
            want.append(("gap", None, n))
        else:
            pat = ".*".join(re.escape(p.strip()) for p in n.split("..."))
            want.append(("line", re.compile("^" + pat + "$"), n))
    if not any(w[0] == "line" for w in want):
        rep.error(where, "quote-of %s: the block quotes no code" % target)
        return
    if sym:
        name = sym.split("::")[-1].split(".")[-1]
        word = re.compile(r"(?<![\w])" + re.escape(name) + r"(?!\w)")
        starts = [k for k, (n, _) in enumerate(lines) if word.search(n)]
        if not starts:
            rep.error(where, "quote-of %s: \"%s\" does not appear in %s" % (target, name, path))
            return
    else:
        starts = [0]
    best = (-1, None)
    for s0 in starts:
        end = next((k for k in range(s0, len(lines)) if lines[k][1]), len(lines) - 1)
        region = [n for n, _ in lines[s0:end + 1]] if sym else [n for n, _ in lines]
        got, first = match_quote(want, region)
        if got == len(want):
            return
        if got > best[0]:
            best = (got, first)
    k = best[0]
    missing = next(w[2] for w in want[k:] if w[0] == "line")
    rep.error(where, "quote-of %s: the quoted code is not in %s (stale quote?); first line not found "
              "in order: \"%s\"" % (target, path, missing))


def match_quote(want, region):
    """How many items of want match region in order (the longest prefix, over every place the
    first line matches); returns (count, start)."""
    best = (0, None)
    firsts = [i for i, n in enumerate(region) if want[0][0] == "gap" or want[0][1].match(n)]
    for i0 in firsts:
        i, k, gap = i0, 0, False
        while k < len(want):
            kind, pat, _ = want[k]
            if kind == "gap":
                gap, k = True, k + 1
                continue
            j = i
            if gap:
                while j < len(region) and not pat.match(region[j]):
                    j += 1
            if j >= len(region) or not pat.match(region[j]):
                break
            i, k, gap = j + 1, k + 1, False
        if k > best[0]:
            best = (k, i0)
        if k == len(want):
            break
    return best


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
        # The words of every source file, for the names the prose mentions (check_name).
        self.names_by_file = {}
        name_src = re.compile(r"(^|/)(Makefile|[^/]+\.(cpp|h|hpp|c|cu|cuh|py|sh|js|mjs|html|lua))$")
        for f in self.files:
            # Not this checker either: its text and allow-list name examples and other programs.
            if f.startswith("book/") or f in ("tests/check_book.sh", "tools/book_check.py") or \
                    not name_src.search(f):
                continue
            self.names_by_file[f] = set(re.findall(r"[A-Za-z_]\w*", self.read(f)))
        self.names = set().union(*self.names_by_file.values()) if self.names_by_file else set()
        self.allowed_used = set()
        self.engine_lines = None
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
