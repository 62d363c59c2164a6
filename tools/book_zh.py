#!/usr/bin/python3
"""How much English the Chinese chapters' prose carries: glosses in brackets.

A gloss is the English word in brackets after its Chinese rendering: 注意力（attention）.
The book gives it once, at a term's first use in a chapter (book/terms.tsv holds the
Chinese word); after that the Chinese word stands alone. Counted here, per chapter of
book/zh/: each bracket, （…） or (…), in the prose that holds a Latin word (two letters or
more in a row: (x ← y) and (p = 1) are one-letter math, not English), where
  * prose is every line outside fenced blocks and HTML comments: paragraphs, headings,
    lists, tables, figure captions;
  * inline code is not prose: （`model.cpp:forward`） holds no gloss, a code identifier is
    not English written for the reader;
  * a link's URL is not prose: [第 6 章](06-attention-kv-cache.md) holds no gloss, while
    its text does count;
  * TeX math ($...$, $$...$$) is a formula, not prose: $f(x)$ holds no gloss, nor does a
    plain bracket right after a letter or digit, O(n log n), forward(" the"): a call, not
    an aside;
  * 附录 A names a chapter, as 第 5 章 does: the letter of an appendix is not English;
  * the glossary's entries (between its GLOSSARY_BEGIN and GLOSSARY_END comments, written
    from book/terms.tsv) are the table itself: each pairs a Chinese term with its English on
    purpose, so they are not counted; the glossary's own prose is;
  * the tables tools/records.py writes into appendix A from the measurement records (between
    its "records:begin" and "records:end" marker lines) are data: a CPU as /proc/cpuinfo
    names it, "(GenuineIntel, family 6 model 207)", is no English written for the reader;
  * the index of terms (book/zh/index-terms.md, which tools/book_index.py writes from
    book/terms.tsv) is no chapter: a list that gives every term's English beside it on
    purpose, so it is not counted and takes no part in the median.
The check fails when the median over the chapters exceeds MAX_MEDIAN.

Usage:
  /usr/bin/python3 tools/book_zh.py            print each chapter's count and the median
  /usr/bin/python3 tools/book_zh.py -v         also print every gloss counted
  /usr/bin/python3 tools/book_zh.py --book-dir DIR   another folder of chapters (the self-test's)
Exit status 0 when the median is at most MAX_MEDIAN.
"""
import argparse
import glob
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from book_source import ROOT, parse   # noqa: E402  (one parser for the book)
from book_twin import GLOSSARY_BEGIN, GLOSSARY_END           # noqa: E402
from book_index import INDEX                                 # noqa: E402  (the generated index)
from records import BEGIN as RECORDS_BEGIN, END as RECORDS_END  # noqa: E402  (the generated tables)

MAX_MEDIAN = 8
LATIN = re.compile(r"[A-Za-z]{2}")             # a word, not one letter of a formula (x, T, p)
URL = re.compile(r"(\]\()[^)\s]*((?:\s+\"[^\"]*\")?\))")      # [text](url "title"): the url goes


def brackets(line):
    """The text inside each outermost bracket of a line, （…） and (…) alike; an unclosed
    bracket closes at the end of the line. An ASCII bracket right after a letter or a digit
    is a call or a formula's argument, O(n log n), logit(2), not an aside: it is not one
    (a full-width one is: MLP（multi-layer perceptron） is a gloss)."""
    out, depth, start = [], 0, 0
    for k, ch in enumerate(line):
        if ch in "（(":
            if depth == 0:
                if ch == "(" and k and re.match(r"[A-Za-z0-9_]", line[k - 1]):
                    continue
                start = k + 1
            depth += 1
        elif ch in "）)" and depth:
            depth -= 1
            if depth == 0:
                out.append(line[start:k])
    if depth:
        out.append(line[start:])
    return out


def blank(m):
    """What a cut span leaves: a space, and its newlines (so the line numbers stay)."""
    return " " + "\n" * m.group(0).count("\n")


CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)          # a code span, which may wrap
APPENDIX = re.compile(r"附录\s*[A-Z]\b|\b[A-Z]\s*附录")           # 附录 A names a chapter


def glosses(path):
    """(line, bracket text) for each bracket holding Latin letters in the page's prose."""
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    _, prose = parse(raw)
    lines = raw.split("\n")
    begin = next((k + 1 for k, l in enumerate(lines) if GLOSSARY_BEGIN in l), None)
    end = next((k + 1 for k, l in enumerate(lines) if GLOSSARY_END in l), None)
    kept = [(n, "" if begin and end and begin <= n <= end else line) for n, line in prose]
    generated = set()                # the lines of the tables written from the records
    start = None
    for k, l in enumerate(lines, 1):
        if RECORDS_BEGIN.match(l):
            start = k
        elif l.strip() == RECORDS_END and start is not None:
            generated.update(range(start, k + 1))
            start = None
    kept = [(n, "" if n in generated else line) for n, line in kept]
    # One text, so that a code span or a $$ formula that wraps is cut whole.
    text = "\n".join(line for _, line in kept)
    for pat in (CODE, re.compile(r"\$\$.*?\$\$", re.S), re.compile(r"\$[^$\n]+\$"), URL, APPENDIX):
        text = pat.sub(blank if pat is not URL else (lambda m: m.group(1) + " " + m.group(2)), text)
    out = []
    for (n, _), line in zip(kept, text.split("\n")):
        for inside in brackets(line):
            if LATIN.search(inside):
                out.append((n, inside))
    return out


def chapters(book_dir=None):
    book_dir = book_dir or os.path.join(ROOT, "book")
    return sorted(p for p in glob.glob(os.path.join(book_dir, "zh", "*.md")) if os.path.basename(p) != INDEX)


def counts(book_dir=None):
    """{chapter file name: number of glosses} over book/zh/."""
    return {os.path.basename(p): len(glosses(p)) for p in chapters(book_dir)}


def problems(book_dir=None, out=None):
    """The check as tools/book_check.py calls it: prints each chapter's count (to out, when
    given) and returns the problem lines (empty when the median is small enough)."""
    c = counts(book_dir)
    if not c:
        return []
    med = statistics.median(c.values())
    if out is not None:
        out.write("English glosses in the Chinese prose: %s; median %g (at most %d)\n"
                  % (", ".join("%s %d" % (k.split("-")[0], v) for k, v in sorted(c.items())), med, MAX_MEDIAN))
    if med > MAX_MEDIAN:
        worst = sorted(c.items(), key=lambda kv: -kv[1])[:3]
        return ["book/zh/%s:1: the Chinese chapters carry a median of %g English glosses in brackets "
                "(at most %d: the English once, at a term's first use in a chapter); most here: %s"
                % (worst[0][0], med, MAX_MEDIAN, ", ".join("%s %d" % kv for kv in worst))]
    return []


def main():
    ap = argparse.ArgumentParser(description="Count the English glosses in the Chinese chapters' prose.")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every gloss counted")
    ap.add_argument("--book-dir", default=os.path.join(ROOT, "book"), help="the folder of chapters")
    args = ap.parse_args()
    for p in chapters(args.book_dir):
        g = glosses(p)
        print("%-36s %3d" % (os.path.relpath(p, ROOT), len(g)))
        if args.verbose:
            for n, inside in g:
                print("    %d: (%s)" % (n, inside))
    bad = problems(args.book_dir, out=sys.stdout)
    for p in bad:
        print(p)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
