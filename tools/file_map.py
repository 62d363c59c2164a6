#!/usr/bin/python3
"""The one table of Lantern's source files, and the reading path through them.

tools/file_map.txt holds both, each row with its text in English and in Chinese. From it this
script writes the map in README.md and book/E-code-map.md (the appendix chapter 1 points to),
and in their Chinese twins README.zh.md and book/zh/E-code-map.md (between the lines <!-- map:begin --> and
<!-- map:end -->, and <!-- path:begin --> / <!-- path:end --> for the reading path), and checks them:

  * every engine source file (the top level, cpu/, gguf/, cuda/, serve/, compat/) is in exactly
    one row, and every file a row names exists;
  * every function of the reading path is defined in its file; its line count is measured
    (from the line that starts its definition to the first line that starts with "}");
  * the reading path stays short: at most MAX_PATH_FILES files, none of them in a folder;
  * every row has its Chinese text;
  * the four pages hold what the table generates, byte for byte.

Usage:
  /usr/bin/python3 tools/file_map.py            check (exit 1 with one line per problem)
  /usr/bin/python3 tools/file_map.py --write    rewrite the generated sections of the pages
  /usr/bin/python3 tools/file_map.py --root DIR check a copy of the tree in DIR
tools/book_check.py runs the check as part of the book check.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = "tools/file_map.txt"
# page -> (language, prefix of its chapter links)
TARGETS = {"README.md": ("en", "book/"), "book/E-code-map.md": ("en", ""),
           "README.zh.md": ("zh", "book/zh/"), "book/zh/E-code-map.md": ("zh", "")}
WORDS = {
    "en": {"map": "| file | job | chapter |", "path": "| step | function | lines | what it does |",
           "total": "%d functions in %d files, %d lines in all.", "and": ", "},
    "zh": {"map": "| 文件 | 作用 | 章节 |", "path": "| 步骤 | 函数 | 行数 | 作用 |",
           "total": "共 %d 个函数，分布在 %d 个文件里，合计 %d 行。", "and": "、"},
}
ENGINE_DIRS = ("", "cpu/", "cpu/x86/", "cpu/arm/", "gguf/", "cuda/", "serve/", "compat/")
SOURCE = re.compile(r"\.(cpp|h|cu|html)$")
MAX_PATH_FILES = 10


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def parse_table():
    """Rows (files, job, chapters, job in Chinese) and the reading path
    [(file, function, why, why in Chinese)]; a missing Chinese text is "" (the check reports it)."""
    rows, path, section = [], [], "files"
    for n, line in enumerate(read(TABLE).split("\n"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if line.strip() == "[reading path]":
            section = "path"
            continue
        parts = [p.strip() for p in line.split("|")]
        if section == "files":
            if len(parts) not in (3, 4):
                raise SystemExit("%s:%d: a row is: files | job | chapters | 中文 job" % (TABLE, n))
            rows.append((parts[0].split(), parts[1], parts[2].split(), (parts[3:] or [""])[0]))
        else:
            if len(parts) not in (2, 3) or ":" not in parts[0]:
                raise SystemExit("%s:%d: a reading-path row is: file.cpp:function | what it does | 中文"
                                 % (TABLE, n))
            f, fn = parts[0].split(":", 1)
            path.append((f, fn, parts[1], (parts[2:] or [""])[0]))
    return rows, path


def engine_files():
    r = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True)
    files = [f for f in r.stdout.split("\n") if f and os.path.isfile(os.path.join(ROOT, f))]
    if r.returncode != 0:  # not a git checkout (a copy of the tree): every file under ROOT
        files = [os.path.relpath(os.path.join(d, n), ROOT) for d, _, names in os.walk(ROOT) for n in names]
    folder = lambda f: os.path.dirname(f) + "/" if "/" in f else ""
    return sorted(f for f in files if SOURCE.search(f) and folder(f) in ENGINE_DIRS)


def function_lines(rel, fn):
    """Lines of fn's definition in rel: from the line that starts it to the first '}' line, or 0."""
    lines = read(rel).split("\n")
    name = re.compile(r"^[A-Za-z].*\b%s\s*\(" % re.escape(fn))
    for i, l in enumerate(lines):
        if name.search(l) and not l.rstrip().endswith(";"):
            for j in range(i, len(lines)):
                if lines[j].startswith("}"):
                    return j - i + 1
    return 0


def chapter_names(lang):
    """{"08": (file name, short title)}: the title of book/zh/'s twin in Chinese, while it exists."""
    names = {}
    for f in sorted(os.listdir(os.path.join(ROOT, "book"))):
        m = re.match(r"(\d\d)-.*\.md$", f)
        if not m:
            continue
        page = "book/zh/" + f if lang == "zh" and os.path.isfile(os.path.join(ROOT, "book/zh", f)) else "book/" + f
        title = read(page).split("\n", 1)[0].lstrip("# ")
        title = re.sub(r"^\d+\s*[·.—-]\s*", "", title)
        names[m.group(1)] = (f, re.split(r":| —|, |：|——|，|、", title)[0])
    return names


def render_map(rows, lang, prefix):
    names = chapter_names(lang)
    out = [WORDS[lang]["map"], "|---|---|---|"]
    for files, job, chapters, job_zh in rows:
        shown = WORDS[lang]["and"].join("`%s`" % f for f in files)
        job = job_zh if lang == "zh" and job_zh else job
        links = WORDS[lang]["and"].join("[%d %s](%s%s)" % (int(c), names[c][1], prefix, names[c][0])
                                        if c in names else c for c in chapters)
        out.append("| %s | %s | %s |" % (shown, job, links))
    return "\n".join(out)


def render_path(path, lang):
    out = [WORDS[lang]["path"], "|---:|---|---:|---|"]
    total, files = 0, []
    for i, (f, fn, why, why_zh) in enumerate(path, 1):
        why = why_zh if lang == "zh" and why_zh else why
        n = function_lines(f, fn)
        total += n
        if f not in files:
            files.append(f)
        out.append("| %d | `%s:%s` | %d | %s |" % (i, f, fn, n, why))
    out.append("")
    out.append(WORDS[lang]["total"] % (len(path), len(files), total))
    return "\n".join(out)


def sections():
    rows, path = parse_table()
    return rows, path, {"map": lambda lang, prefix: render_map(rows, lang, prefix),
                        "path": lambda lang, prefix: render_path(path, lang)}


def replace_section(text, name, body):
    begin, end = "<!-- %s:begin -->" % name, "<!-- %s:end -->" % name
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        return None
    return text[:i + len(begin)] + "\n" + body + "\n" + text[j:]


def check():
    """Problems as 'FILE: what' lines (empty: all is well)."""
    problems = []
    rows, path, gen = sections()
    seen = {}
    for files, job, chapters, job_zh in rows:
        if not job_zh:
            problems.append("%s: the row for %s has no Chinese job (files | job | chapters | 中文 job)"
                            % (TABLE, files[0]))
        for f in files:
            if not os.path.isfile(os.path.join(ROOT, f)):
                problems.append("%s: the row for %s names a file that does not exist" % (TABLE, f))
            seen[f] = seen.get(f, 0) + 1
    for f in engine_files():
        if seen.get(f, 0) == 0:
            problems.append("%s: %s is in no row (every source file is in exactly one)" % (TABLE, f))
    for f, n in seen.items():
        if n > 1:
            problems.append("%s: %s is in %d rows (every source file is in exactly one)" % (TABLE, f, n))
    files = []
    for f, fn, _, why_zh in path:
        if not why_zh:
            problems.append("%s: the reading path's %s:%s has no Chinese text (file:function | what it does "
                            "| 中文)" % (TABLE, f, fn))
        if "/" in f:
            problems.append("%s: the reading path's %s is in a folder (the first reading is the top level)" % (TABLE, f))
        if not os.path.isfile(os.path.join(ROOT, f)) or function_lines(f, fn) == 0:
            problems.append("%s: the reading path's %s:%s is defined nowhere" % (TABLE, f, fn))
        elif f not in files:
            files.append(f)
    if len(files) > MAX_PATH_FILES:
        problems.append("%s: the reading path crosses %d files (at most %d)" % (TABLE, len(files), MAX_PATH_FILES))
    if problems:
        return problems
    for target, (lang, prefix) in TARGETS.items():
        if not os.path.isfile(os.path.join(ROOT, target)):
            problems.append("%s: missing (its map and reading path are written from %s)" % (target, TABLE))
            continue
        text = read(target)
        for name, make in gen.items():
            new = replace_section(text, name, make(lang, prefix))
            if new is None:
                problems.append("%s: no <!-- %s:begin --> ... <!-- %s:end --> section" % (target, name, name))
            elif new != text:
                problems.append("%s: the %s section is not what %s makes: run /usr/bin/python3 tools/file_map.py "
                                "--write" % (target, name, TABLE))
    return problems


def write():
    _, _, gen = sections()
    for target, (lang, prefix) in TARGETS.items():
        if not os.path.isfile(os.path.join(ROOT, target)):
            raise SystemExit("%s: missing (its map and reading path are written from %s)" % (target, TABLE))
        text = read(target)
        for name, make in gen.items():
            new = replace_section(text, name, make(lang, prefix))
            if new is None:
                raise SystemExit("%s: no <!-- %s:begin --> ... <!-- %s:end --> section" % (target, name, name))
            text = new
        with open(os.path.join(ROOT, target), "w", encoding="utf-8") as f:
            f.write(text)
        print("file_map: wrote %s" % target)


if __name__ == "__main__":
    if "--root" in sys.argv[1:]:
        ROOT = os.path.abspath(sys.argv[sys.argv.index("--root") + 1])
    if "--write" in sys.argv[1:]:
        write()
    problems = check()
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)
