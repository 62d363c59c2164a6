#!/usr/bin/python3
"""Writes the student pack (make student-pack): the repository as a student gets it.

    /usr/bin/python3 chapters/make_student_pack.py OUT

OUT is a copy of the tree (the files git tracks or would track) in which
  - every function an exercise asks for (chapters/build_exercise.sh's table) is, in its
    engine file, the exercise's stub: the solution is not one grep away;
  - chapters/answers.md (and its Chinese twin answers.zh.md) and tests/ are left out (tests/data holds correct and nearly
    correct versions of the exercises; the unit tests need the real functions anyway);
  - the book's quoted code of those functions is left out, as in make book STUDENT=1;
  - chapters/reference/ holds the real engine files, compiled (portable flags, no debug
    information): the pack's Makefile links them in place of the stubbed files, so ./run
    works, and build_exercise.sh takes them as the reference its checkers compare with.
"""
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import book_render  # noqa: E402  (its student_edition and exercise table)

LEFT_OUT = ("chapters/answers.md", "chapters/answers.zh.md", "tests/")
# Helpers that hold an exercise's answer although the table does not name them: q4's two
# functions call the general readers of 4- and 5-bit blocks. Their bodies are left out.
HELPERS = {"gguf/quants.cpp": ("q4", ["dequantize_block32", "dequantize_block_k"])}


def table():
    """[(exercise, engine file, [functions])] in the table's order."""
    text = open(os.path.join(ROOT, "chapters", "build_exercise.sh"), encoding="utf-8").read()
    body = re.search(r'^table="\n(.*?)^"', text, re.S | re.M).group(1)
    return [(w[0], w[1], w[2:]) for w in (l.split() for l in body.split("\n")) if len(w) >= 3]


def definition(text, name):
    """(start, end) of the definition of function `name` in text: from its signature line at
    column 0 to the closing brace at column 0; None when there is none."""
    lines = text.split("\n")
    pat = re.compile(r"^[A-Za-z_].*\b" + re.escape(name) + r"\(")
    for i, line in enumerate(lines):
        if pat.match(line) and not line.rstrip().endswith(";"):
            if line.rstrip().endswith("}") and "{" in line:   # a one-line function
                start = sum(len(l) + 1 for l in lines[:i])
                return start, start + len(line) + 1
            for j in range(i, len(lines)):
                if lines[j] == "}":
                    start = sum(len(l) + 1 for l in lines[:i])
                    return start, sum(len(l) + 1 for l in lines[:j + 1])
    return None


def main():
    if len(sys.argv) != 2:
        print("usage: make_student_pack.py OUT")
        return 2
    out = os.path.abspath(sys.argv[1])
    if os.path.exists(out):
        shutil.rmtree(out)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split("\n")
    for f in files:
        src = os.path.join(ROOT, f)
        if not f or f.startswith(LEFT_OUT) or not os.path.isfile(src) or os.path.islink(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(out, f)), exist_ok=True)
        shutil.copy2(src, os.path.join(out, f))   # times kept: make sees what changed

    # Each function once, from its first exercise's stub (rope before rope-hard and cuda-rope).
    stubbed, done = {}, set()
    for ex, engine, funcs in table():
        if ex in ("bug-hunt", "family"):   # the engine's code holds no answer of theirs
            continue
        stub = open(os.path.join(ROOT, "chapters", ex, "stub.cpp"), encoding="utf-8").read()
        path = os.path.join(out, engine)
        text = stubbed.get(engine) or open(path, encoding="utf-8").read()
        for f in funcs:
            if f in done:
                continue
            where, mine = definition(text, f), definition(stub, f)
            if not where or not mine:
                print("make student-pack: %s has no definition of %s" % (engine if not where else ex + "/stub.cpp", f))
                return 1
            note = "// The exercise chapters/%s/: the student writes this function (the stub below).\n" % ex
            text = text[:where[0]] + note + stub[mine[0]:mine[1]] + text[where[1]:]
            done.add(f)
        stubbed[engine] = text
    for engine, (ex, funcs) in HELPERS.items():
        text = stubbed[engine]
        for f in funcs:
            where = definition(text, f)
            if not where:
                print("make student-pack: %s has no definition of %s" % (engine, f))
                return 1
            head = text[where[0]:where[1]].split("\n")[0]
            text = text[:where[0]] + head + "\n    // left out of the student pack: it holds the answer of the exercise " \
                "chapters/%s/ (chapters/reference/ has it compiled)\n}\n" % ex + text[where[1]:]
        stubbed[engine] = text
    for engine, text in stubbed.items():
        with open(os.path.join(out, engine), "w", encoding="utf-8") as fh:
            fh.write(text)

    # The real engine files, compiled: portable (ARCH empty), position-independent (the
    # exercises' build needs that), without debug information.
    flags = subprocess.run(["make", "-s", "--no-print-directory", "ARCH=", "--eval",
                            "lantern-print-var: ; @echo $(CXX) $(CXXFLAGS)", "lantern-print-var"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    rules = ["", "# The student pack: the engine files below hold the exercises' stubs; the engine is",
             "# linked from their real objects (chapters/reference/, made by make student-pack)."]
    for engine in sorted(stubbed):
        obj = os.path.join("chapters", "reference", engine[:-4] + ".o")
        os.makedirs(os.path.dirname(os.path.join(out, obj)), exist_ok=True)
        print("   compiling the real %s -> %s" % (engine, obj), flush=True)
        subprocess.run(flags + ["-fPIC", "-g0", "-I.", "-c", "-o", os.path.join(out, obj), engine], cwd=ROOT,
                       check=True)
        rules.append("$(BUILD)/%s.o: %s ; @mkdir -p $(@D) && cp $< $@" % (engine[:-4], obj))
    with open(os.path.join(out, "Makefile"), "a", encoding="utf-8") as fh:
        fh.write("\n".join(rules) + "\n")
    with open(os.path.join(out, "chapters", "reference", "README.md"), "w", encoding="utf-8") as fh:
        fh.write("# The engine's own exercise functions, compiled\n\n"
                 "In this tree every function an exercise asks for is its stub, in the engine file as in\n"
                 "chapters/NAME/stub.cpp. These objects are the real engine files, compiled for %s\n"
                 "without debug information: the Makefile links them, so `./run` works, and\n"
                 "`make exercise` compares your function with the one inside them.\n" % os.uname().machine)

    # The book's pages, as the student edition renders them.
    hidden = book_render.exercise_functions()
    for d in ("book", "book/zh", "chapters"):
        if not os.path.isdir(os.path.join(out, d)):
            continue
        for f in sorted(os.listdir(os.path.join(out, d))):
            if f.endswith(".md"):
                p = os.path.join(out, d, f)
                text = open(p, encoding="utf-8").read()
                new = book_render.student_edition(text, hidden, zh=(d == "book/zh"))
                if new != text:
                    with open(p, "w", encoding="utf-8") as fh:
                        fh.write(new)
    print("make student-pack: %d engine files with stubs, no answer key -> %s" % (len(stubbed), os.path.relpath(out, ROOT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
