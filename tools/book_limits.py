#!/usr/bin/python3
"""Keep the book lean: how long its chapters are, and how much a week of the course asks.

A reader gets through a chapter in one sitting and a student through a week in the hours the
course gives it, so these limits are checked, not hoped for:

  * every chapter and appendix (book/NN-*.md, book/X-*.md) has at most CHAPTER_WORDS words;
  * chapter 1 (book/01-*.md) has at most FIRST_WORDS words and no table of more than
    FIRST_TABLE_ROWS rows (the reference tables live in appendix E, where the reader goes
    when needed);
  * the measurements appendix (book/A-*.md) has at most MEASUREMENTS_WORDS words of prose, and
    none of its headings tells a diary ("the Zen 4 machine, again", "a third time", "the next
    day", "the fourth day"): a table per question, not a log of visits;
  * no page says "read after chapter N": the index orders the chapters, a page does not;
  * the course (chapters/course.md): each week's reading has at most WEEK_WORDS words, and the
    exercises its lab column names fit the lab's LAB_MINUTES minutes, each counted at the
    longest time its page gives ("**Time:** 30–45 minutes" is 45; of "X (or Y)" the longer).

Words are counted in the prose only: fenced code blocks, table rows and HTML comments do not
count; a word is a run of non-space characters that holds a letter or a digit. The Chinese
pages (book/zh/, *.zh.md) mirror the English structure (tools/book_twin.py), so only the
structural limits apply to them: chapter 1's tables, appendix A's headings, "read after".

A reading cell of the course's table lists links: a link to a chapter counts the whole
chapter, a link with an anchor (08-sampling-generation.md#the-command-line) counts that section
(its heading and everything under it, up to the next heading of the same or a higher level),
and a link after the word "without" takes that section out of the chapter before it.

Usage:
  /usr/bin/python3 tools/book_limits.py              check (exit 1 with one line per problem)
  /usr/bin/python3 tools/book_limits.py --words      print each page's words and each week's load
  /usr/bin/python3 tools/book_limits.py --self-test  plant one breach of each limit, expect each
tools/book_check.py runs the check as part of the book check.
"""
import glob
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from book_source import ROOT, LINK, parse   # noqa: E402  (one reading of a chapter)

CHAPTER_WORDS = 6000
FIRST_WORDS = 1800
FIRST_TABLE_ROWS = 10
MEASUREMENTS_WORDS = 5000
WEEK_WORDS = 8000
LAB_MINUTES = 90

CHAPTER = re.compile(r"^(\d\d|[A-Z])-[\w-]+\.md$")
DIARY_EN = re.compile(r"\b(?:a (?:second|third|fourth|fifth|sixth) time|again|the next day|"
                      r"the (?:second|third|fourth|fifth|sixth|\d+(?:st|nd|rd|th)) day)\b", re.I)
DIARY_ZH = re.compile(r"再看|又一次|第二天|第[二三四五六七八九十\d]+[次天]")
READ_AFTER = re.compile(r"\bread after chapter \d+|读完第\s*\d+\s*章(?:之?后)?再读|在第\s*\d+\s*章之后(?:再)?(?:阅读|读)", re.I)
TIME = re.compile(r"^\*\*Time:\*\*(.*)$", re.M)
NUMBER = re.compile(r"(?<![\w.])(\d+)(?:\s*[–-]\s*(\d+))?(?![\w.])")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def is_table_row(line):
    return line.lstrip().startswith("|")


def prose(text):
    """(line number, line) of the prose: outside fenced blocks and comments, not a table row."""
    return [(n, l) for n, l in parse(text)[1] if not is_table_row(l)]


def count_words(text):
    return sum(1 for _, l in prose(text) for w in l.split() if re.search(r"\w", w))


def tables(text):
    """(first line, data rows) of each table in the prose: the header and the |---| line aside."""
    out, start, rows, last = [], None, 0, None
    for n, l in parse(text)[1] + [(10 ** 9, "")]:
        if is_table_row(l) and last is not None and n == last + 1 and start is not None:
            if not re.fullmatch(r"\s*\|[\s:|-]*\|?\s*", l):
                rows += 1
        elif is_table_row(l):
            if start is not None:
                out.append((start, rows))
            start, rows = n, 0       # the header
        else:
            if start is not None:
                out.append((start, rows))
            start = None
        last = n
    return out


def headings(text):
    return [(n, l) for n, l in parse(text)[1] if re.match(r"#{1,6}\s", l)]


def slug(title):
    """pandoc's identifier for a heading (what tools/book_render.py's HTML anchors are)."""
    t = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", title).strip().lower()
    t = re.sub(r"[^\w\s.-]", "", t)
    t = re.sub(r"\s+", "-", t)
    t = re.sub(r"^[^a-z]+", "", t)
    return t or "section"


def section(text, anchor):
    """The lines of the section whose heading has this anchor, or None."""
    lines = text.split("\n")
    blocks, _ = parse(text)
    in_block = set()
    for b in blocks:
        in_block.update(range(b.line - 1, b.line + len(b.lines) + 1))
    seen = {}
    for i, l in enumerate(lines):
        m = re.match(r"(#{1,6})\s+(.*)", l)
        if not m or i + 1 in in_block:
            continue
        s = slug(m.group(2))
        n = seen.get(s, 0)
        seen[s] = n + 1
        if (s if n == 0 else "%s-%d" % (s, n)) != anchor:
            continue
        level = len(m.group(1))
        for j in range(i + 1, len(lines)):
            h = re.match(r"(#{1,6})\s", lines[j])
            if h and j + 1 not in in_block and len(h.group(1)) <= level:
                return "\n".join(lines[i:j])
        return "\n".join(lines[i:])
    return None


def exercise_minutes(page):
    """The longest time an exercise page gives: its **Time:** line, each range at its end,
    the numbers added ("30 minutes of code, 20 of watching" is 50)."""
    m = TIME.search(read(page))
    if not m:
        return None
    return sum(int(b or a) for a, b in NUMBER.findall(m.group(1)))


def split_cells(row):
    return [c.strip() for c in row.strip().strip("|").split("|")]


def course_weeks(course):
    """[(line, week, reading cell, lab cell)] from the course's table of weeks."""
    text, header, out = read(course), None, []
    for n, l in parse(text)[1]:
        if not is_table_row(l):
            header = None if l.strip() else header
            continue
        cells = split_cells(l)
        if header is None:
            header = [c.lower() for c in cells]
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        if "week" in header and "reading" in header and any(h.startswith("lab") for h in header):
            lab = next(i for i, h in enumerate(header) if h.startswith("lab"))
            out.append((n, cells[header.index("week")], cells[header.index("reading")], cells[lab]))
    return out


def reading_words(cell, base, problems, where):
    """Words of the chapters and sections a reading cell links, less those after "without"."""
    total = 0
    for m in LINK.finditer(cell):
        target = m.group(1) or m.group(2)
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(base, path))
        if not path.endswith(".md") or not os.path.isfile(full):
            problems.append("%s: the reading links %s, which is no chapter" % (where, target))
            continue
        text = read(full)
        if anchor:
            part = section(text, anchor)
            if part is None:
                problems.append("%s: the reading links %s: no heading of %s has that anchor"
                                % (where, target, os.path.relpath(full, ROOT)))
                continue
            text = part
        sign = -1 if re.search(r"\bwithout\s*$", cell[:m.start()]) else 1
        total += sign * count_words(text)
    return total


def lab_minutes(cell, base, problems, where):
    """Minutes of the exercises a lab cell names: one item per link outside parentheses, a link
    inside parentheses an alternative to the item before it (the longer one counts)."""
    items, depth, pos = [], 0, 0
    for m in LINK.finditer(cell):
        between = cell[pos:m.start()]
        depth += between.count("(") - between.count(")")
        pos = m.end()
        target = (m.group(1) or m.group(2)).split("#")[0]
        page = os.path.normpath(os.path.join(base, target))
        if not target.endswith("README.md") or not os.path.isfile(page):
            continue
        minutes = exercise_minutes(page)
        if minutes is None:
            problems.append("%s: %s has no **Time:** line to plan a lab with" % (where, target))
            continue
        if depth > 0 and items:
            items[-1] = max(items[-1], minutes)
        else:
            items.append(minutes)
    return sum(items)


def chapter_pages(book_dir):
    return sorted(f for f in glob.glob(os.path.join(book_dir, "*.md")) if CHAPTER.match(os.path.basename(f)))


def check(book_dir=None, course=None, report=None):
    """Problems as 'FILE:LINE: what' lines (empty: all is well). report: a list that gets
    (what, words) for --words."""
    book_dir = book_dir or os.path.join(ROOT, "book")
    course = course or os.path.join(ROOT, "chapters", "course.md")
    problems = []
    rel = lambda p: os.path.relpath(p, ROOT)
    zh = sorted(glob.glob(os.path.join(book_dir, "zh", "*.md")))
    for page in chapter_pages(book_dir):
        name = os.path.basename(page)
        text = read(page)
        words = count_words(text)
        if report is not None:
            report.append((rel(page), words))
        limit = FIRST_WORDS if name.startswith("01-") else \
            MEASUREMENTS_WORDS if name.startswith("A-") else CHAPTER_WORDS
        if words > limit:
            problems.append("%s:1: %d words of prose, more than %d (code blocks and table rows do not "
                            "count): cut repetition, or move reference material to an appendix"
                            % (rel(page), words, limit))
    for page in chapter_pages(book_dir) + [p for p in zh if CHAPTER.match(os.path.basename(p))]:
        name, text = os.path.basename(page), read(page)
        if name.startswith("01-"):
            for line, rows in tables(text):
                if rows > FIRST_TABLE_ROWS:
                    problems.append("%s:%d: a table of %d rows in chapter 1 (at most %d): a reference "
                                    "table belongs in an appendix" % (rel(page), line, rows, FIRST_TABLE_ROWS))
        if name.startswith("A-"):
            for line, h in headings(text):
                if DIARY_EN.search(h) or DIARY_ZH.search(h):
                    problems.append("%s:%d: the heading %r tells a diary: name what is measured, not "
                                    "which visit it was" % (rel(page), line, h.strip()))
    pages = glob.glob(os.path.join(book_dir, "*.md")) + zh + \
        glob.glob(os.path.join(os.path.dirname(course), "*.md"))
    for page in sorted(pages):
        for line, l in parse(read(page))[1]:
            m = READ_AFTER.search(l)
            if m:
                problems.append("%s:%d: %r: the index orders the chapters, a page does not say when to "
                                "read it" % (rel(page), line, m.group(0)))
    if os.path.isfile(course):
        base = os.path.dirname(course)
        weeks = course_weeks(course)
        if not weeks:
            problems.append("%s: no table of weeks (| week | reading | lab ... |) to check" % rel(course))
        for line, week, reading, lab in weeks:
            where = "%s:%d: week %s" % (rel(course), line, week)
            words = reading_words(reading, base, problems, where)
            minutes = lab_minutes(lab, base, problems, where)
            if report is not None:
                report.append(("course week %s: reading, lab minutes %d" % (week, minutes), words))
            if words > WEEK_WORDS:
                problems.append("%s: %d words of reading, more than %d: move a chapter or a section to "
                                "a lighter week" % (where, words, WEEK_WORDS))
            if minutes > LAB_MINUTES:
                problems.append("%s: the lab's exercises take up to %d minutes, more than its %d: make "
                                "one of them homework" % (where, minutes, LAB_MINUTES))
    return problems


PLANTED = {
    "book/01-planted.md": "# 1 · Planted\n\n" + "word " * (FIRST_WORDS + 1) + "\n\n| a | b |\n|---|---|\n" +
                          "| x | y |\n" * (FIRST_TABLE_ROWS + 1) + "\nRead after chapter 4.\n",
    "book/02-long.md": "# 2 · Long\n\n" + "word " * (CHAPTER_WORDS + 1) +
                       "\n\n```text diagram\n" + "code " * 9000 + "\n```\n",
    "book/03-short.md": "# 3 · Short\n\n## Part one\n\n" + "one " * 3000 + "\n\n## Part two\n\n" + "two " * 2500 + "\n",
    "book/04-short.md": "# 4 · Short\n\n" + "four " * 3000 + "\n",
    "book/A-measurements.md": "# A · Measurements\n\n## The Zen 4 machine, again\n\n## The Zen 5 machine, "
                              "the next day\n\n## Decode speed\n\n" + "word " * (MEASUREMENTS_WORDS + 1) + "\n",
    "book/zh/01-planted.md": "# 1 · 植入\n\n| a | b |\n|---|---|\n" + "| x | y |\n" * (FIRST_TABLE_ROWS + 1),
    "book/zh/A-measurements.md": "# A · 测量\n\n## 第三次看 Zen 4 机器\n\n## 解码速度\n",
    "chapters/lab1/README.md": "# Lab 1\n\n**Time:** 45–60 minutes.\n",
    "chapters/lab2/README.md": "# Lab 2\n\n**Time:** 30 minutes of code, 20 of watching.\n",
    "chapters/course.md": "# Course\n\n| week | reading | lab (90 minutes) | homework |\n|---|---|---|---|\n"
                          "| 1 | [3](../book/03-short.md), [4](../book/04-short.md) | [l1](lab1/README.md), "
                          "[l2](lab2/README.md) | — |\n"
                          "| 2 | [3](../book/03-short.md) without [two](../book/03-short.md#part-two), "
                          "[4](../book/04-short.md) | [l1](lab1/README.md) (or [l2](lab2/README.md)) | "
                          "[l2](lab2/README.md) |\n",
}
EXPECTED = [
    "01-planted.md:1: %d words" % (2 + FIRST_WORDS + 1 + 4),
    "01-planted.md:5: a table of %d rows" % (FIRST_TABLE_ROWS + 1),
    "01-planted.md:19: 'Read after chapter 4'",
    "02-long.md:1: %d words" % (2 + CHAPTER_WORDS + 1),
    "A-measurements.md:3: the heading '## The Zen 4 machine, again'",
    "A-measurements.md:5: the heading '## The Zen 5 machine, the next day'",
    "A-measurements.md:1: %d words" % (2 + 5 + 7 + 2 + MEASUREMENTS_WORDS + 1),
    "zh/01-planted.md:3: a table of %d rows" % (FIRST_TABLE_ROWS + 1),
    "zh/A-measurements.md:3: the heading '## 第三次看 Zen 4 机器'",
    "week 1: %d words of reading" % ((2 + 2 + 3000 + 2 + 2500) + (2 + 3000)),
    "week 1: the lab's exercises take up to 110 minutes",
]
UNEXPECTED = ["week 2", "Decode speed", "解码速度", "03-short.md:1", "04-short.md:1"]


def self_test():
    """Plant one breach of each limit in a scratch tree; each must be reported, nothing else."""
    global ROOT
    saved = ROOT
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in PLANTED.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w", encoding="utf-8") as f:
                f.write(text)
        ROOT = tmp
        try:
            problems = check(os.path.join(tmp, "book"), os.path.join(tmp, "chapters", "course.md"))
        finally:
            ROOT = saved
    failed = [e for e in EXPECTED if not any(e in p for p in problems)]
    failed += ["reported, should not be: " + u for u in UNEXPECTED if any(u in p for p in problems)]
    for f in failed:
        print("book_limits self-test: %s" % (f if f.startswith("reported") else "not reported: " + f))
    if failed:
        print("book_limits self-test: what was reported:\n  " + "\n  ".join(problems))
    return not failed


if __name__ == "__main__":
    if "--self-test" in sys.argv[1:]:
        ok = self_test()
        print("book_limits self-test: %s" % ("ok" if ok else "FAILED"))
        sys.exit(0 if ok else 1)
    report = [] if "--words" in sys.argv[1:] else None
    problems = check(report=report)
    for what, words in report or []:
        print("%6d  %s" % (words, what))
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)
