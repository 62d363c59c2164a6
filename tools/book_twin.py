#!/usr/bin/python3
"""The Chinese edition kept in step with the English: the twin check, the terms, the glossaries.

Every English page has a Chinese twin:
  README.md                    ->  README.zh.md
  book/NN-name.md              ->  book/zh/NN-name.md
  chapters/X.md                ->  chapters/X.zh.md          (README.md -> README.zh.md)
  chapters/EX/README.md        ->  chapters/EX/README.zh.md

A twin says the same thing in another language, so everything that is not prose must be the
same. Compared, in order:
  * headings: the same number, with the same levels (the text is translated; the HTML gives
    each Chinese heading its English twin's anchor, so links keep English anchors);
  * fenced blocks: the same info string, and then (block_lines) by kind:
      - code (a block in a programming language: sh, cpp, py, make, ...: commands, quoted
        code, sketches): the same code, line for line, byte for byte, with its comments left
        out, since comments are prose and are translated (a line that is only a comment does
        not count; `# ...` for the shell, Python and make, `//` and `/* */` for C, C++, CUDA
        and JavaScript); a command changed in English and not in Chinese is reported here,
        as the block that differs;
      - a drawing (```text diagram): its labels are prose and are translated, so the twin
        has the same number of lines and each line the same numbers (the arithmetic and the
        shapes a drawing shows do not change in translation);
      - everything else (```text output-of, ```text illustrative: a program's output, which
        the reader compares with their own): the same lines, byte for byte;
  * figures: the same figures, in the same order (captions and alt text are translated); the
    Chinese page shows book/img/zh/X, the figure drawn in Chinese, where there is one, and
    book/img/X otherwise; a Chinese figure needs its English original book/img/X;
  * exercises: the same exercise pages linked.
And in the Chinese prose (not in code): no rendering that book/terms.tsv lists under "avoid".

book/terms.tsv is the one terminology table: one row per term, with its Chinese rendering, the
renderings to avoid, the chapters that explain it and a definition in each language. Both
glossaries (book/C-glossary.md and book/zh/C-glossary.md) are written from it, between the
GLOSSARY_BEGIN and GLOSSARY_END comments; `--glossary` writes them, the check says when they
are stale.

Usage:
  /usr/bin/python3 tools/book_twin.py FILE...        check these twins (English or Chinese paths)
  /usr/bin/python3 tools/book_twin.py --all          check every page, and that every one has a twin
  /usr/bin/python3 tools/book_twin.py --glossary     write both glossaries from book/terms.tsv
Exit status 0 when nothing is wrong; each problem is one line "FILE:LINE: what".
"""
import argparse
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from book_source import LINK, kind_of, parse, strip_comment, without_inline_code   # noqa: E402  (one parser for the book)

TERMS = os.path.join(ROOT, "book", "terms.tsv")
GLOSSARY_BEGIN = "<!-- GLOSSARY_BEGIN: written from book/terms.tsv by tools/book_twin.py --glossary; edit the table, not this -->"
GLOSSARY_END = "<!-- GLOSSARY_END -->"
GROUPS = [("A–C", "abc"), ("D–H", "defgh"), ("I–M", "ijklm"), ("N–R", "nopqr"), ("S–Z", "stuvwxyz")]


# ----------------------------------------------------------------------------- twins

def twin_of(path):
    """The other-language twin of a page (absolute path), or None when the page has none."""
    path = os.path.abspath(path)
    rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
    if rel in ("README.md", "README.zh.md"):
        return os.path.join(ROOT, "README.zh.md" if rel == "README.md" else "README.md")
    m = re.fullmatch(r"book/zh/([^/]+\.md)", rel)
    if m:
        return os.path.join(ROOT, "book", m.group(1))
    if re.fullmatch(r"book/[^/]+\.md", rel):
        return os.path.join(ROOT, "book", "zh", os.path.basename(rel))
    if rel.startswith("chapters/") and rel.endswith(".zh.md"):
        return path[:-len(".zh.md")] + ".md"
    if re.fullmatch(r"chapters/(?:[\w-]+/)?[\w-]+\.md", rel):
        return path[:-len(".md")] + ".zh.md"
    return None


def is_chinese(path):
    rel = os.path.relpath(os.path.abspath(path), ROOT).replace(os.sep, "/")
    return rel.startswith("book/zh/") or rel.endswith(".zh.md")


def english_pages(book_dir=None):
    """Every English page that must have a twin: the chapters and the classroom pages."""
    book_dir = book_dir or os.path.join(ROOT, "book")
    pages = sorted(glob.glob(os.path.join(book_dir, "*.md")))
    chapters = os.path.join(ROOT, "chapters")
    pages += sorted(f for f in glob.glob(os.path.join(chapters, "*.md")) if not f.endswith(".zh.md"))
    pages += sorted(glob.glob(os.path.join(chapters, "*", "README.md")))
    return pages + [os.path.join(ROOT, "README.md")]


def english_twin_in(book_dir, path):
    """twin_of for a book folder that is not the repository's (the self-test's copy)."""
    if os.path.dirname(os.path.abspath(path)) == os.path.join(book_dir, "zh"):
        return os.path.join(book_dir, os.path.basename(path))
    if os.path.dirname(os.path.abspath(path)) == book_dir:
        return os.path.join(book_dir, "zh", os.path.basename(path))
    return twin_of(path)


def exercise_of(target, page):
    """The exercise a link points at ("rmsnorm", "course", "index"), or None."""
    full = os.path.normpath(os.path.join(os.path.dirname(page), target.split("#", 1)[0])).replace(os.sep, "/")
    m = re.search(r"(?:^|/)chapters/(?:([\w-]+)/)?(README|[\w-]+)(?:\.zh)?\.md$", full)
    if not m:
        return None
    return m.group(1) or ("index" if m.group(2) == "README" else m.group(2))


def skeleton(path):
    """What must match between twins: (headings, blocks, figures, exercises), each a list of
    (line, value)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    blocks, prose = parse(text)
    heads, figures, exercises = [], [], []
    for n, line in prose:
        h = re.match(r"^(#{1,6}) +(.*?)\s*$", line)
        if h:
            heads.append((n, len(h.group(1)), h.group(2)))
        for m in LINK.finditer(line):
            if m.group(2):
                full = os.path.normpath(os.path.join(os.path.dirname(path), m.group(2).split("#")[0]))
                figures.append((n, os.path.relpath(full, ROOT).replace(os.sep, "/")))
            elif m.group(1):
                ex = exercise_of(m.group(1), path)
                if ex:
                    exercises.append((n, ex))
        for m in re.finditer(r'<img\b[^>]*\bsrc="([^"]+)"', line):
            full = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
            figures.append((n, os.path.relpath(full, ROOT).replace(os.sep, "/")))
    return heads, blocks, figures, exercises


FIGURE_ZH = re.compile(r"(^|/)book/img/zh/")


def english_figure(path):
    """The English original of a figure drawn in Chinese (book/img/zh/X -> book/img/X); any
    other path as it is."""
    return FIGURE_ZH.sub(r"\1book/img/", path)


def chinese_figure(path):
    """Where the Chinese drawing of an English figure would be (book/img/X -> book/img/zh/X);
    any other path as it is."""
    return re.sub(r"(^|/)book/img/(?!zh/)", r"\1book/img/zh/", path)


def show(path):
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


CODE_LANGS = ("sh", "bash", "py", "python", "cpp", "c", "h", "cu", "js", "make", "mk")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def block_lines(block):
    """What of a fenced block must be the same in both languages: (index in block.lines,
    value) for each line that counts (see the top of this file). Code: the line without its
    comment, trailing spaces cut, lines that are only a comment left out. A drawing: each
    line's numbers. Anything else: the line itself."""
    lang = block.info.split()[0] if block.info.split() else ""
    if kind_of(block.info)[0] == "diagram":
        return [(i, tuple(sorted(NUMBER.findall(l)))) for i, l in enumerate(block.lines)]
    if lang in CODE_LANGS:
        out = []
        for i, l in enumerate(block.lines):
            code = strip_comment(l, lang).rstrip()
            if code or not l.strip():
                out.append((i, code))
        return out
    return list(enumerate(block.lines))


def compare(en, zh):
    """Problems ("FILE:LINE: what") between an English page and its Chinese twin."""
    out = []
    h_en, b_en, f_en, x_en = skeleton(en)
    h_zh, b_zh, f_zh, x_zh = skeleton(zh)
    E, Z = show(en), show(zh)
    for k in range(max(len(h_en), len(h_zh))):
        if k >= len(h_zh):
            out.append("%s:%d: the section \"%s\" (%s) has no twin in %s (it has %d headings, the English %d)"
                       % (E, h_en[k][0], h_en[k][2], "#" * h_en[k][1], Z, len(h_zh), len(h_en)))
            break
        if k >= len(h_en):
            out.append("%s:%d: the heading \"%s\" has no English twin in %s (%d headings, the English %d)"
                       % (Z, h_zh[k][0], h_zh[k][2], E, len(h_zh), len(h_en)))
            break
        if h_en[k][1] != h_zh[k][1]:
            out.append("%s:%d: heading %d is level %d (%s), its English twin \"%s\" (%s:%d) level %d"
                       % (Z, h_zh[k][0], k + 1, h_zh[k][1], h_zh[k][2], h_en[k][2], E, h_en[k][0], h_en[k][1]))
            break
    differ = 0
    for k in range(max(len(b_en), len(b_zh))):
        if k >= len(b_zh):
            out.append("%s:%d: the block ```%s has no twin in %s (%d blocks there, %d in English)"
                       % (E, b_en[k].line, b_en[k].info, Z, len(b_zh), len(b_en)))
            break
        if k >= len(b_en):
            out.append("%s:%d: the block ```%s has no English twin in %s (%d blocks here, %d in English)"
                       % (Z, b_zh[k].line, b_zh[k].info, E, len(b_zh), len(b_en)))
            break
        a, b = b_en[k], b_zh[k]
        if a.info != b.info:
            out.append("%s:%d: block %d says ```%s, its English twin (%s:%d) ```%s"
                       % (Z, b.line, k + 1, b.info, E, a.line, a.info))
            break
        la, lb = block_lines(a), block_lines(b)
        if [v for _, v in la] != [v for _, v in lb]:
            i = next((i for i in range(max(len(la), len(lb)))
                      if i >= len(la) or i >= len(lb) or la[i][1] != lb[i][1]))
            end_a, end_b = a.line + 1 + len(a.lines), b.line + 1 + len(b.lines)
            got = b.lines[lb[i][0]] if i < len(lb) else "(the block ends)"
            want = a.lines[la[i][0]] if i < len(la) else "(the block ends)"
            what = " (the numbers differ)" if kind_of(b.info)[0] == "diagram" else ""
            out.append("%s:%d: block %d (```%s) differs from its English twin at %s:%d%s: English `%s`, Chinese `%s`"
                       % (Z, b.line + 1 + lb[i][0] if i < len(lb) else end_b, k + 1, b.info, E,
                          a.line + 1 + la[i][0] if i < len(la) else end_a, what, want.strip(), got.strip()))
            differ += 1
            if differ == 3:      # more are likely one block added or lost: three say enough
                break
    for n, f in f_zh:
        original = english_figure(f)
        if original != f and not os.path.isfile(os.path.join(ROOT, original)):
            out.append("%s:%d: %s has no English original (%s)" % (Z, n, f, original))
        elif chinese_figure(f) != f and os.path.isfile(os.path.join(ROOT, chinese_figure(f))):
            out.append("%s:%d: shows %s, but it is drawn in Chinese too: %s" % (Z, n, f, chinese_figure(f)))
    f_zh = [(n, english_figure(f)) for n, f in f_zh]
    if [f for _, f in f_en] != [f for _, f in f_zh]:
        missing = [f for _, f in f_en if f not in [g for _, g in f_zh]]
        extra = [f for _, f in f_zh if f not in [g for _, g in f_en]]
        what = ("misses %s" % ", ".join(missing)) if missing else ("adds %s" % ", ".join(extra)) if extra \
            else "shows them in another order"
        out.append("%s:1: the figures differ from %s's: the Chinese page %s" % (Z, E, what))
    if sorted(set(x for _, x in x_en)) != sorted(set(x for _, x in x_zh)):
        a, b = set(x for _, x in x_en), set(x for _, x in x_zh)
        out.append("%s:1: the exercises linked differ from %s's: %s%s" % (
            Z, E, ("missing " + ", ".join(sorted(a - b)) + " ") if a - b else "",
            ("extra " + ", ".join(sorted(b - a))) if b - a else ""))
    if os.path.basename(os.path.dirname(os.path.abspath(zh))) != "zh":   # book_check.py checks the chapters' links
        with open(zh, encoding="utf-8") as f:
            _, prose = parse(f.read())
        for n, line in prose:
            for m in LINK.finditer(line):
                target = (m.group(1) or m.group(2)).split("#", 1)[0]
                if target and not re.match(r"^[a-z]+:", target) and \
                        not os.path.exists(os.path.join(os.path.dirname(zh), target)):
                    out.append("%s:%d: link to %s: no such file" % (Z, n, target))
    out += check_terms(zh)
    return out


# ----------------------------------------------------------------------------- terms

def load_terms(path=TERMS):
    """The rows of book/terms.tsv as dicts (term, zh, avoid [list], chapters [list], definition,
    definition_zh)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    head = lines[0].split("\t")
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != len(head):
            raise ValueError("%s:%d: %d columns, the header has %d" % (show(path), n, len(cells), len(head)))
        r = dict(zip(head, cells))
        r["avoid"] = [a.strip() for a in re.split(r"[；;]", r["avoid"]) if a.strip()]
        r["chapters"] = [c.strip() for c in r["chapters"].split(",") if c.strip()]
        r["line"] = n
        rows.append(r)
    return rows


def check_terms(zh, rows=None):
    """A Chinese page's prose uses no rendering the table says to avoid."""
    rows = load_terms() if rows is None else rows
    with open(zh, encoding="utf-8") as f:
        _, prose = parse(f.read())
    out = []
    for n, line in prose:
        text = without_inline_code(line)
        for r in rows:
            for bad in r["avoid"]:
                if bad in text:
                    out.append("%s:%d: \"%s\" for \"%s\": the book writes \"%s\" (book/terms.tsv)"
                               % (show(zh), n, bad, r["term"], r["zh"]))
    return out


# ----------------------------------------------------------------------------- glossaries

def sort_key(term):
    """Where a term files: by its first Latin letter (ε (epsilon) under E, θ (rope_theta) under R)."""
    m = re.search(r"[A-Za-z]", term)
    return term[m.start():].lower() if m else term.lower()


def glossary_body(rows, zh, book_dir):
    chapter_file = {}
    for f in glob.glob(os.path.join(book_dir, "[0-9][0-9]-*.md")):
        chapter_file[str(int(os.path.basename(f)[:2]))] = os.path.basename(f)
    lines = [GLOSSARY_BEGIN, ""]
    for title, letters in GROUPS:
        group = sorted((r for r in rows if sort_key(r["term"])[:1] in letters), key=lambda r: sort_key(r["term"]))
        if not group:
            continue
        lines += ["## " + title, ""]
        for r in group:
            links = ", ".join("[%s](%s)" % (c, chapter_file.get(c, "%s.md" % c)) for c in r["chapters"])
            if zh:
                same = r["term"].lower().startswith(r["zh"].lower())    # softmax, bfloat16 (BF16): kept in English
                name = r["term"] if same else "%s（%s）" % (r["zh"], r["term"])
                lines += ["**%s** — %s %s" % (name, r["definition_zh"], links), ""]
            else:
                lines += ["**%s** — %s %s" % (r["term"], r["definition"], links), ""]
    return lines + [GLOSSARY_END]


def glossary_problems(book_dir, write=False):
    """Both glossaries against the table; write=True rewrites them instead."""
    rows = load_terms(os.path.join(book_dir, "terms.tsv"))
    out = []
    for r in rows:
        if not r["definition_zh"].strip():
            out.append("book/terms.tsv:%d: \"%s\" has no Chinese definition (definition_zh)" % (r["line"], r["term"]))
        for c in r["chapters"]:
            if not glob.glob(os.path.join(book_dir, "%02d-*.md" % int(c) if c.isdigit() else "%s-*.md" % c)):
                out.append("book/terms.tsv:%d: \"%s\" names chapter %s, which does not exist" % (r["line"], r["term"], c))
    for zh, path in ((False, os.path.join(book_dir, "C-glossary.md")), (True, os.path.join(book_dir, "zh", "C-glossary.md"))):
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if GLOSSARY_BEGIN not in text or GLOSSARY_END not in text:
            out.append("%s:1: no GLOSSARY_BEGIN/GLOSSARY_END comments to hold the table's entries" % show(path))
            continue
        a = text.index(GLOSSARY_BEGIN)
        b = text.index(GLOSSARY_END) + len(GLOSSARY_END)
        want = "\n".join(glossary_body(rows, zh, book_dir))
        if text[a:b] != want:
            if write:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text[:a] + want + text[b:])
                print("wrote %s from book/terms.tsv" % show(path))
            else:
                out.append("%s:%d: the glossary differs from book/terms.tsv: run "
                           "/usr/bin/python3 tools/book_twin.py --glossary" % (show(path), text[:a].count("\n") + 1))
    return out


# ----------------------------------------------------------------------------- all

def check_all(book_dir=None):
    """Every page's twin, every twin's English page, and the glossaries."""
    book_dir = os.path.abspath(book_dir or os.path.join(ROOT, "book"))
    out = []
    rows = load_terms(os.path.join(book_dir, "terms.tsv"))
    for en in english_pages(book_dir):
        zh = english_twin_in(book_dir, en)
        if not os.path.isfile(zh):
            out.append("%s:1: no Chinese twin (%s)" % (show(en), show(zh)))
            continue
        out += [p for p in compare(en, zh) if "(book/terms.tsv)" not in p]
        out += check_terms(zh, rows)
    zh_pages = glob.glob(os.path.join(book_dir, "zh", "*.md")) + [os.path.join(ROOT, "README.zh.md")] + \
        glob.glob(os.path.join(ROOT, "chapters", "*.zh.md")) + glob.glob(os.path.join(ROOT, "chapters", "*", "*.zh.md"))
    for zh in sorted(zh_pages):
        en = english_twin_in(book_dir, zh)
        if not os.path.isfile(en):
            out.append("%s:1: no English page (%s) for this Chinese one" % (show(zh), show(en)))
    out += glossary_problems(book_dir)
    return out


def main():
    ap = argparse.ArgumentParser(description="Check the Chinese edition against the English.")
    ap.add_argument("files", nargs="*", help="pages to check (English or Chinese); with --all, none")
    ap.add_argument("--all", action="store_true", help="every page, every twin and both glossaries")
    ap.add_argument("--glossary", action="store_true", help="write both glossaries from book/terms.tsv")
    ap.add_argument("--book-dir", default=os.path.join(ROOT, "book"), help="the folder of chapters")
    args = ap.parse_args()
    book_dir = os.path.abspath(args.book_dir)
    if args.glossary:
        problems = [p for p in glossary_problems(book_dir, write=True) if "differs" not in p]
    elif args.all or not args.files:
        problems = check_all(book_dir)
    else:
        problems = []
        for f in args.files:
            if not os.path.isfile(f):
                problems.append("%s: no such file" % f)
                continue
            zh = f if is_chinese(f) else english_twin_in(book_dir, f)
            en = zh and english_twin_in(book_dir, zh)
            if not zh or not en:
                problems.append("%s: not a page with a twin (a chapter, a classroom page or the README)" % f)
            elif not os.path.isfile(zh):
                problems.append("%s:1: no Chinese twin (%s)" % (show(f), zh and show(zh)))
            elif not os.path.isfile(en):
                problems.append("%s:1: no English page (%s)" % (show(zh), show(en)))
            else:
                problems += compare(en, zh)
    for p in problems:
        print(p)
    print("twin check: %d problem%s" % (len(problems), "" if len(problems) == 1 else "s"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
