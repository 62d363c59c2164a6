#!/usr/bin/env bash
# tests/check_student_pack.sh — the student edition and the student pack hold no solution.
#
# 1. make book STUDENT=1 and make student-pack run.
# 2. For every function an exercise asks for, its distinctive lines (the body's lines
#    of 25 characters or more that no other engine file has) are found in the engine
#    file here — so this check cannot pass by looking for nothing — and found nowhere
#    in the student book's pages and search index, nor in any text file of the pack
#    but the checkers (a checker recomputes the usual mistakes to name them, so it
#    holds pieces of the arithmetic; it ships as source because it is built there).
#    The pack has no chapters/answers.md (nor answers.zh.md) and no tests/; the
#    Chinese pages of the student book are held to the same rules.
# 3. The pack builds from scratch and every stubbed engine file still compiles;
#    there, exercises fail as shipped and pass with SOLUTION=1 (the compiled reference).
set -u
cd "$(dirname "$0")/.."
[ -f models/tiny/model.safetensors ] || { echo "needs models/tiny (make models)"; exit 1; }
pack=build/student-pack book=build/book-student
failed=0
ok() { echo "ok    $1"; }
bad() { echo "FAIL  $1"; failed=1; }

make -s --no-print-directory book STUDENT=1 >build/student_book.log 2>&1 || { bad "make book STUDENT=1 failed:"; tail -5 build/student_book.log; }
make -s --no-print-directory student-pack >build/student_pack.log 2>&1 || { bad "make student-pack failed:"; tail -5 build/student_pack.log; exit 1; }

[ ! -e $pack/chapters/answers.md ] && [ ! -e $pack/chapters/answers.zh.md ] && [ ! -e $pack/tests ] \
    && ok "the pack has no chapters/answers.md, no answers.zh.md and no tests/" \
    || bad "the pack holds chapters/answers.md, answers.zh.md or tests/"
ls -d $book/exercises/answers* $book/zh/exercises/answers* 2>/dev/null | grep -q . && bad "the student book has an answers page" \
    || ok "the student book has no answers page, in either language"
grep -l 'answers\.html' $book/*.html $book/exercises/*.html $book/search-index.js \
    $book/zh/*.html $book/zh/exercises/*.html $book/zh/search-index.js >/dev/null 2>&1 \
    && bad "a page of the student book links to answers.html" || ok "no page of the student book links to the answer key"

# The distinctive lines of each exercise function, from this tree's engine files.
lines=build/student_pack.lines
/usr/bin/python3 - >"$lines" <<'PY'
import glob, os, re, sys
sys.path.insert(0, "chapters"); sys.path.insert(0, "tools")
import make_student_pack as p
engine = [f for f in glob.glob("*.cpp") + glob.glob("*/*.cpp") + glob.glob("*/*/*.cpp") + glob.glob("cuda/*.cu")
          if not f.startswith(("chapters/", "tests/", "tools/", "build/"))]
text = {f: open(f, encoding="utf-8").read() for f in engine}
funcs = [(ex, src, f) for ex, src, fs in p.table() if ex not in ("bug-hunt", "family") for f in fs]
funcs += [(ex, src, f) for src, (ex, fs) in p.HELPERS.items() for f in fs]
# The rest of each engine file: its code outside the exercise functions is no solution.
rest = dict(text)
for src, f in sorted(set((src, f) for ex, src, f in funcs)):
    a, b = p.definition(rest[src], f)
    rest[src] = rest[src][:a] + rest[src][b:]
for ex, src, f in funcs:
    a, b = p.definition(text[src], f)
    body = text[src][a:b].split("\n")
    start = next((k for k, l in enumerate(body) if l.rstrip().endswith("{")), len(body)) + 1   # after the signature
    for line in body[start:-1]:
        l = line.strip()
        if len(l) >= 25 and not l.startswith("//") and all(l not in rest[o] for o in engine):
            print("%s\t%s" % (ex, l))
PY
n=$(wc -l <"$lines")
[ "$n" -ge 30 ] && ok "$n distinctive solution lines, from $(cut -f1 "$lines" | sort -u | wc -l) exercises" || bad "only $n distinctive lines found"
leaks=0
while IFS=$'\t' read -r ex l; do
    hits=$(grep -rlIF --exclude=checker.cpp -- "$l" $pack $book 2>/dev/null | head -3)
    if [ -n "$hits" ]; then echo "      $ex: \"$l\" is in $hits"; leaks=$((leaks + 1)); fi
done <"$lines"
[ $leaks = 0 ] && ok "none of them is in the student book or the pack" || bad "$leaks solution lines leak into the student book or the pack"

# The pack builds from scratch, as a student's copy does (a few minutes).
rm -rf $pack/build
ln -s "$PWD/models" $pack/models
if make -s --no-print-directory -C $pack -j2 all >build/student_pack_build.log 2>&1; then ok "the pack builds (make all)"
else bad "the pack does not build:"; tail -8 build/student_pack_build.log | sed 's/^/      /'; fi
flags=$(make -s --no-print-directory --eval 'x: ; @echo $(CXXFLAGS)' x)
for f in $(sed -n 's/^$(BUILD)\/\(.*\)\.o: chapters\/reference.*/\1.cpp/p' $pack/Makefile); do
    (cd $pack && g++ $flags -fsyntax-only "$f" 2>&1) | grep -q "error" && bad "the pack's $f does not compile" || ok "the pack's $f (stubs in it) compiles"
done
$pack/run models/tiny "Hello" -n 4 --temp 0 >build/student_pack_run.log 2>&1 && ok "the pack's ./run generates (it links the real objects)" \
    || { bad "the pack's ./run fails:"; tail -3 build/student_pack_run.log; }
# build_exercise.sh directly, not make exercise: that would run make models in the pack,
# and its models/ is this tree's (a link), which nothing here may rewrite.
for ex in ${PACK_EXERCISES:-rmsnorm attention safetensors q4 scheduler}; do
    log=build/student_pack.$ex.log
    (cd $pack && bash chapters/build_exercise.sh $ex) >"$log" 2>&1; rc=$?
    [ $rc != 0 ] && grep -q "^NOT YET  $ex" "$log" && ok "in the pack, $ex fails as shipped" || { bad "in the pack, $ex as shipped (rc=$rc):"; tail -5 "$log"; }
    (cd $pack && bash chapters/build_exercise.sh $ex --solution) >"$log" 2>&1; rc=$?
    [ $rc = 0 ] && grep -q "^PASS  $ex" "$log" && ok "in the pack, $ex passes with SOLUTION=1 (the compiled reference)" || { bad "in the pack, $ex SOLUTION=1 (rc=$rc):"; tail -5 "$log"; }
done
[ $failed = 0 ] && echo "student pack: all checks pass" || echo "student pack: FAILED"
exit $failed
