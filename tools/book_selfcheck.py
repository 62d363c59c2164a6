#!/usr/bin/python3
"""Every chapter ends with questions a reader answers alone: the "Check yourself" section.

A chapter page (book/NN-name.md, the appendices book/X-name.md, and their Chinese twins in
book/zh/) has a section "## Check yourself" ("## 自我检测" in Chinese), right before
"## Try it" ("## 动手试试"), or before "## Further reading" ("## 延伸阅读") when there is no
Try it. It holds 3 to 5 questions, each a paragraph followed by its answer, hidden until the
reader opens it:

    **1.** The question?

    <details><summary>Answer</summary>          (Chinese: <summary>答案</summary>)

    The answer, in Markdown: prose, $math$, and checked blocks (a `text output-of:` block
    inside an answer is run and compared like every other one: tools/book_check.py reads
    the whole page, <details> or not).

    </details>

A Chinese page asks as many questions as its English twin. Not chapters, so not checked: the
contents (00-index), the glossary, the index of terms, the math primer and the code map.

tools/book_check.py calls check() on the chapters it checks, when their folder has a Chinese
edition (a planted folder of the self-test is left alone).

Usage:
  /usr/bin/python3 tools/book_selfcheck.py [--book-dir DIR]   check every chapter page
  /usr/bin/python3 tools/book_selfcheck.py --self-test        a copy of the book with a question
                                                             removed, a section removed or an
                                                             answer left open fails
Exit status 0 when nothing is wrong; each problem is one line "FILE:LINE: what".
"""
import argparse
import glob
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from book_source import ROOT, parse   # noqa: E402  (one parser for the book)

LOWEST, HIGHEST = 3, 5
WORDS = {"en": ("Check yourself", "Answer", ("Try it", "Further reading")),
         "zh": ("自我检测", "答案", ("动手试试", "延伸阅读"))}
# Pages that are not chapters (their stems, or the end of their stems).
NOT_CHAPTERS = re.compile(r"^(00-index|index-terms|.*-glossary|D-math-primer|E-code-map)$")
PAGE = re.compile(r"^(\d\d|[A-Z])-[\w-]+\.md$")


def is_chapter(path):
    name = os.path.basename(path)
    return bool(PAGE.match(name)) and not NOT_CHAPTERS.match(name[:-3])


def shown(path):
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


def questions(path):
    """(problems, number of questions) of one chapter page."""
    lang = "zh" if os.path.basename(os.path.dirname(os.path.abspath(path))) == "zh" else "en"
    head, summary, after = WORDS[lang]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    blocks, prose = parse(text)
    rel = shown(path)
    heads = [(n, m.group(1)) for n, l in prose for m in [re.match(r"^## +(.*?)\s*$", l)] if m]
    start = next((k for k, (_, h) in enumerate(heads) if h == head), None)
    if start is None:
        return ["%s:1: no \"## %s\" section: a chapter ends with %d to %d questions whose answers "
                "the reader opens (<details>)" % (rel, head, LOWEST, HIGHEST)], 0
    first = heads[start][0]
    last = heads[start + 1][0] if start + 1 < len(heads) else len(text.split("\n")) + 1
    out = []
    if start + 1 >= len(heads) or heads[start + 1][1] not in after:
        out.append("%s:%d: \"## %s\" comes right before \"## %s\" (or \"## %s\"), not before %s"
                   % (rel, first, head, after[0], after[1],
                      "\"## %s\"" % heads[start + 1][1] if start + 1 < len(heads) else "the end"))
    # Walk the section: prose outside <details> is question text; each <details> is one answer.
    inside, question, answer, opened, count = False, "", "", 0, 0
    block_lines = set(b.line for b in blocks if first < b.line < last)
    for n, line in [(n, l) for n, l in prose if first < n < last]:
        s = line.strip()
        if not inside and s.startswith("<details>"):
            if not question.strip():
                out.append("%s:%d: an answer (<details>) with no question before it" % (rel, n))
            m = re.match(r"<details>\s*<summary>(.*?)</summary>\s*(.*)$", s)
            if not m or m.group(1).strip() != summary:
                out.append("%s:%d: an answer opens with <details><summary>%s</summary>" % (rel, n, summary))
            inside, opened, answer = True, n, (m.group(2) if m else "")
            continue
        if inside and s.startswith("<details>"):
            out.append("%s:%d: the answer opened here is not closed before the next <details> "
                       "(line %d)" % (rel, opened, n))
            opened, answer = n, ""
            continue
        if inside and s.startswith("</details>"):
            has_block = any(opened < b < n for b in block_lines)
            if not answer.strip() and not has_block:
                out.append("%s:%d: an empty answer" % (rel, opened))
            inside, question, count = False, "", count + 1
            continue
        if inside:
            answer += s
        else:
            question += s
    if inside:
        out.append("%s:%d: <details> is not closed (</details> on a line of its own)" % (rel, opened))
    if question.strip():
        out.append("%s:%d: the \"%s\" section ends with a question that has no answer (<details>)"
                   % (rel, first, head))
    if not LOWEST <= count <= HIGHEST:
        out.append("%s:%d: \"## %s\" has %d question%s with an answer; a chapter has %d to %d"
                   % (rel, first, head, count, "" if count == 1 else "s", LOWEST, HIGHEST))
    return out, count


def check(chapters, book_dir):
    """Problems ("FILE:LINE: what") of the chapter pages among CHAPTERS (paths), and of each
    Chinese page whose question count differs from its English twin's. Nothing for a folder
    without a Chinese edition (the self-test's planted chapter)."""
    book_dir = os.path.abspath(book_dir)
    zh_dir = os.path.join(book_dir, "zh")
    if not os.path.isdir(zh_dir):
        return []
    out = []
    for c in chapters:
        if not is_chapter(c):
            continue
        problems, n = questions(c)
        out += problems
        if os.path.dirname(os.path.abspath(c)) == zh_dir:
            en = os.path.join(book_dir, os.path.basename(c))
            if os.path.isfile(en):
                n_en = questions(en)[1]
                if n_en != n:
                    out.append("%s:1: %d self-check questions, its English twin %s has %d"
                               % (shown(c), n, os.path.basename(en), n_en))
    return out


def pages(book_dir):
    return sorted(glob.glob(os.path.join(book_dir, "*.md"))) + \
        sorted(glob.glob(os.path.join(book_dir, "zh", "*.md")))


def self_test():
    """On a copy of the book: the copy passes; one answer removed from a Chinese chapter of 3
    questions fails (too few, and fewer than its twin); an English chapter without the section
    fails; an answer left open fails."""
    tmp = tempfile.mkdtemp()
    try:
        book = os.path.join(tmp, "book")
        shutil.copytree(os.path.join(ROOT, "book"), book)
        ok = True

        def edit(name, pattern, repl, want):
            nonlocal ok
            page = os.path.join(book, name)
            with open(page, encoding="utf-8") as f:
                text = f.read()
            cut = re.sub(pattern, repl, text, count=1, flags=re.S)
            with open(page, "w", encoding="utf-8") as f:
                f.write(cut)
            got = check(pages(book), book)
            hit = cut != text and all(any(w in p for p in got) for w in want)
            print("%s  %s: %s" % ("ok  " if hit else "FAIL", name, "; ".join(got) or "no problem reported"))
            ok = ok and hit
            with open(page, "w", encoding="utf-8") as f:
                f.write(text)

        before = check(pages(book), book)
        print("%s  the copy: %s" % ("ok  " if not before else "FAIL", "; ".join(before) or "no problem"))
        ok = not before
        edit("zh/18-browser.md", r"\n\*\*1\.\*\*.*?</details>\n", "\n",
             ["has 2 questions", "2 self-check questions, its English twin"])
        edit("04-kernels.md", r"\n## Check yourself\n.*?(?=\n## )", "",
             ["04-kernels.md:1: no \"## Check yourself\" section"])
        edit("zh/03-loading.md", r"\n</details>\n", "\n", ["is not closed"])
        print("self-test %s" % ("ok" if ok else "FAILED"))
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp)


def main():
    ap = argparse.ArgumentParser(description="The \"Check yourself\" questions of every chapter.")
    ap.add_argument("--book-dir", default=os.path.join(ROOT, "book"))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    problems = check(pages(args.book_dir), args.book_dir)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
