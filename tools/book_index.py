#!/usr/bin/python3
"""The index of terms: book/index-terms.md and its Chinese twin book/zh/index-terms.md, written
from book/terms.tsv and the book's headings.

For every term of the table, both pages link
  * the chapters the table names for it (its "chapters" column),
  * its entry in the glossary (the section of the glossary page that holds "**term**"),
  * every section whose English heading names it (the term, the words in its parentheses when
    they are more than one plain word, each half of "A / B"; a plural "s" allowed). A mention
    inside a longer term's is that term's only: "grouped-query attention" files under GQA, not
    under Attention. The Chinese page links the same sections, under their Chinese headings
    (the twins pair headings one to one); the Chinese words are not searched, since one
    rendering may stand for two English terms (解码 for decode and for decoding).
Then every chapter with its section headings. English terms are sorted by their first Latin
letter (tools/book_twin.py:sort_key, as the glossary); the Chinese page keeps the same order
and says so (the standard library has no pinyin).

Chapter files are read from the folder, never named here, so the links follow a renamed
chapter once this runs again. A link to a section carries the anchor pandoc gives its English
heading; tools/book_render.py gives the Chinese heading the same anchor.

Usage:
  /usr/bin/python3 tools/book_index.py            write both pages (make book does)
  /usr/bin/python3 tools/book_index.py --check    exit 1 if a committed page is not what this writes
"""
import argparse
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from book_source import ROOT, parse                                      # noqa: E402
from book_twin import GLOSSARY_BEGIN, load_terms, sort_key             # noqa: E402

INDEX = "index-terms.md"
NOTE = "<!-- written by tools/book_index.py from book/terms.tsv and the headings; edit those, not this -->"
WORDS = {
    "en": {"title": "Index of terms", "how": "How to read this index",
           "intro": "Every term of the book's terminology table (book/terms.tsv), A to Z by its first "
                    "Latin letter. After each term: the chapters that explain it, its line in the "
                    "[glossary](%s), and, one line per chapter, the sections whose headings name it. The last part lists every "
                    "chapter with its sections.",
           "explained": "explained in %s", "glossary": "glossary",
           "chapters": "Chapters and sections", "chapter": "chapter %s", "appendix": "appendix %s",
           "list": ", ", "and": "; ", "dash": " — ", "colon": ": "},
    "zh": {"title": "术语索引", "how": "怎样使用这份索引",
           "intro": "本书术语表（book/terms.tsv）中的全部术语。标准库里没有拼音，所以这里的顺序与英文版"
                    "相同：按英文术语的第一个拉丁字母从 A 排到 Z，每个术语后面的括号里注明英文原文（两者相同时只写一次）。"
                    "每个术语之后依次是：讲解它的章节、它在[术语表](%s)中的条目，以及标题里提到它的小节（每章一行）。"
                    "最后一部分列出每一章和它的各个小节。",
           "explained": "讲解见%s", "glossary": "术语表",
           "chapters": "章节一览", "chapter": "第 %s 章", "appendix": "附录 %s",
           "list": "、", "and": "；", "dash": " — ", "colon": "："},
}


def pandoc_id(text, seen):
    """The identifier pandoc's markdown reader gives a heading (auto_identifiers): the text
    without formatting, lower case, only letters, digits, spaces and _-. kept, the words joined
    with "-", everything before the first letter dropped; "section" if nothing is left; "-1",
    "-2" ... after a repeat. seen: the identifiers of the page so far (updated)."""
    parts = re.split(r"(`[^`]*`)", text)
    for i, part in enumerate(parts):
        if part.startswith("`"):
            parts[i] = part[1:-1]                          # code keeps every character
        else:
            part = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", part)
            part = re.sub(r"\*+|(?<!\w)_+|_+(?!\w)", "", part)   # emphasis; snake_case stays
            parts[i] = part.replace("---", "").replace("--", "")   # smart dashes: dropped
    t = "".join(c for c in "".join(parts).lower() if c.isalnum() or c.isspace() or c in "_-.")
    t = "-".join(t.split())
    while t and not t[0].isalpha():
        t = t[1:]
    base = t or "section"
    ident, k = base, 0
    while ident in seen:
        k += 1
        ident = "%s-%d" % (base, k)
    seen.add(ident)
    return ident


def headings(path):
    """(level, text, anchor) of each heading of a page, outside fenced blocks and comments."""
    with open(path, encoding="utf-8") as f:
        _, prose = parse(f.read())
    out, seen = [], set()
    for _, line in prose:
        m = re.match(r"^(#{1,6}) +(.*?)\s*$", line)
        if m:
            text = re.sub(r"\s*\{#[^}]*\}$", "", m.group(2)).rstrip("# ").strip()
            out.append((len(m.group(1)), text, pandoc_id(text, seen)))
    return out


def chapter_files(book_dir):
    """The chapters, in the folder's order: every page but the contents (00-) and this index."""
    return [os.path.basename(f) for f in sorted(glob.glob(os.path.join(book_dir, "*.md")))
            if not os.path.basename(f).startswith("00-") and os.path.basename(f) != INDEX]


def chapter_label(name, lang):
    """"chapter 6" / "appendix A" (第 6 章 / 附录 A), from the file name's prefix."""
    m = re.match(r"(\d+|[A-Za-z])-", name)
    if not m:
        return name[:-3]
    w = WORDS[lang]
    return w["chapter"] % int(m.group(1)) if m.group(1).isdigit() else w["appendix"] % m.group(1).upper()


def file_of_chapter(book_dir, key):
    """The file of a chapter as book/terms.tsv names it ("6", "11", "A"), or None."""
    pat = "%02d-*.md" % int(key) if key.isdigit() else "%s-*.md" % key
    found = sorted(glob.glob(os.path.join(book_dir, pat)))
    return os.path.basename(found[0]) if found else None


def term_keys(term):
    """The words that name a term in an English heading: "GQA (grouped-query attention)" ->
    GQA, grouped-query attention; "Top-k / top-p" -> Top-k, top-p; "Bandwidth (memory)" ->
    Bandwidth (one plain word in parentheses says which sense, not another name); "ε (epsilon)"
    -> ε, epsilon (a symbol's spelled name counts)."""
    main = re.sub(r"\s*\([^)]*\)", "", term).strip()
    keys = [k.strip() for k in main.split(" / ")]
    for inner in re.findall(r"\(([^)]*)\)", term):
        if "`" in inner:
            continue
        if re.search(r"[ \-\d]|.[A-Z]", inner) or not re.search(r"[A-Za-z]", main):
            keys += [k.strip() for k in inner.split(" / ")]
    return [k for k in keys if k]


def spans(keys, text):
    """(start, end) of each place in an English heading where one of keys stands."""
    out = []
    for k in keys:
        pat = r"(?<![\w-])" + re.escape(k) + r"(?:s|es)?(?![\w-])"
        out += [(m.start(), m.end()) for m in re.finditer(pat, text, re.I)]
    return out


def mentions(rows, heads_en):
    """{term: set of (file, heading number)} of the headings that name each term, a mention
    inside another term's longer mention left to that term."""
    found = {r["term"]: set() for r in rows}
    for name, heads in heads_en.items():
        for k, (_, text, _) in enumerate(heads):
            hits = [(r["term"], s) for r in rows for s in spans(term_keys(r["term"]), text)]
            for term, (a, b) in hits:
                if not any(a2 <= a and b <= b2 and (b2 - a2) > (b - a) for _, (a2, b2) in hits):
                    found[term].add((name, k))
    return found


def glossary_sections(book_dir, files):
    """(the glossary page, {term: (file, heading number)}): the page that holds the table's
    entries (between the GLOSSARY_BEGIN comments), and the section that holds each term's."""
    out = {}
    for name in files:
        with open(os.path.join(book_dir, name), encoding="utf-8") as f:
            text = f.read()
        if GLOSSARY_BEGIN not in text:
            continue
        _, prose = parse(text)
        k = -1
        for _, line in prose:
            if re.match(r"^#{1,6} ", line):
                k += 1
            m = re.match(r"^\*\*(.+?)\*\* — ", line)
            if m and k >= 0:
                out.setdefault(m.group(1), (name, k))
        return name, out
    return None, out


def page(lang, book_dir):
    """The text of one language's index page."""
    zh = lang == "zh"
    w = WORDS[lang]
    rows = load_terms(os.path.join(book_dir, "terms.tsv"))
    files = chapter_files(book_dir)
    heads_en = {n: headings(os.path.join(book_dir, n)) for n in files}
    heads_zh = {n: headings(os.path.join(book_dir, "zh", n)) for n in files
                if os.path.isfile(os.path.join(book_dir, "zh", n))}
    shown = heads_zh if zh else heads_en

    def title(name, k):
        """The heading's text in this language (the English one when the twin lacks it)."""
        h = shown.get(name, [])
        return (h[k] if k < len(h) else heads_en[name][k])[1]

    def link(name, k, label=None):
        label = title(name, k) if label is None else label
        anchor = heads_en[name][k][2]
        return "[%s](%s#%s)" % (label.replace("[", "(").replace("]", ")"), name, anchor)

    found = mentions(rows, heads_en)
    glossary, entries = glossary_sections(book_dir, files)
    out = ["# " + w["title"], "", NOTE, "", "## " + w["how"], "", w["intro"] % (glossary or ""), ""]
    letter = None
    for r in sorted(rows, key=lambda r: sort_key(r["term"])):
        first = sort_key(r["term"])[:1].upper()
        if first != letter:
            out += ["## " + first, ""]
            letter = first
        if zh:
            same = r["term"].lower().startswith(r["zh"].lower())    # as the glossary: softmax stays softmax
            name = r["term"] if same else "%s（%s）" % (r["zh"], r["term"])
        else:
            name = r["term"]
        parts = []
        explained = [f for f in (file_of_chapter(book_dir, c) for c in r["chapters"]) if f]
        defined = ["[%s](%s)" % (chapter_label(f, lang), f) for f in explained]
        if defined:
            parts.append(w["explained"] % w["list"].join(defined))
        if r["term"] in entries:
            parts.append(link(*entries[r["term"]], label=w["glossary"]))
        by_file = {}
        for f, k in sorted(found[r["term"]], key=lambda fk: (files.index(fk[0]), fk[1])):
            if k > 0 or f not in explained:       # a chapter's title: unless linked above
                by_file.setdefault(f, []).append(k)
        secs = ["- " + chapter_label(f, lang) + w["colon"] + w["list"].join(link(f, k) for k in ks)
                for f, ks in by_file.items() if f != glossary]
        out += ["**%s**%s%s" % (name, w["dash"], w["and"].join(parts)), ""]
        if secs:
            out += secs + [""]
    out += ["## " + w["chapters"], ""]
    for f in files:
        heads = heads_en[f]
        if not heads:
            continue
        line = "- [%s](%s)" % (title(f, 0), f)
        subs = [link(f, k) for k in range(1, len(heads)) if heads[k][0] in (2, 3)]
        if subs:
            line += w["colon"] + " · ".join(subs)
        out += [line]
    return "\n".join(out) + "\n"


def targets(book_dir):
    return [("en", os.path.join(book_dir, INDEX)), ("zh", os.path.join(book_dir, "zh", INDEX))]


def problems(book_dir=None):
    """"FILE:1: what" for each index page that is not what this would write."""
    book_dir = os.path.abspath(book_dir or os.path.join(ROOT, "book"))
    out = []
    for lang, path in targets(book_dir):
        want = page(lang, book_dir)
        have = open(path, encoding="utf-8").read() if os.path.isfile(path) else None
        if have != want:
            rel = os.path.relpath(path, ROOT)
            out.append("%s:1: %s: run /usr/bin/python3 tools/book_index.py"
                       % (rel, "missing" if have is None else "not what book/terms.tsv and the headings give"))
    return out


def main():
    ap = argparse.ArgumentParser(description="Write the book's index of terms, in both languages.")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is stale")
    ap.add_argument("--book-dir", default=os.path.join(ROOT, "book"), help="the folder of chapters")
    args = ap.parse_args()
    book_dir = os.path.abspath(args.book_dir)
    if args.check:
        found = problems(book_dir)
        for p in found:
            print(p)
        print("index of terms: %s" % ("stale" if found else "up to date"))
        return 1 if found else 0
    for lang, path in targets(book_dir):
        want = page(lang, book_dir)
        have = open(path, encoding="utf-8").read() if os.path.isfile(path) else None
        if have != want:
            with open(path, "w", encoding="utf-8") as f:
                f.write(want)
            print("wrote %s" % os.path.relpath(path, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
