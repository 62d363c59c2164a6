#!/usr/bin/env bash
# tier: all (tests/run_all.sh: make test-all only, too long for make test)
# tests/check_checkers_zh.sh — the checkers say the same thing in Chinese.
#
# A checker speaks Chinese when asked (`check --lang zh`, or a locale whose
# LC_ALL, LC_MESSAGES or LANG, the first one set, starts with "zh"):
#   - every tr(english, chinese) that is a format string has the same %
#     conversions in both, in the same order (they take the same arguments);
#     no Chinese text uses a rendering that book/terms.tsv avoids;
#   - --lang beats the locale, and LC_ALL beats LC_MESSAGES beats LANG;
#   - for every exercise, the untouched stub's --json in English and in
#     Chinese has the same groups, passed and failed alike, and the same
#     points; the title, the group names and each failed group's diagnosis
#     and hint are in Chinese; the text mode ends with NOT YET in English and
#     还没通过 in Chinese;
#   - a known slip gets, in Chinese, the Chinese of the hint it gets in English;
#   - `LANG=zh_CN.UTF-8 make exercise EX=... SOLUTION=1` passes, in Chinese.
# Reuses build/exercise/ like tests/check_exercises.sh.
set -u
cd "$(dirname "$0")/.."
[ -f models/tiny/model.safetensors ] || { echo "needs models/tiny (make models)"; exit 1; }
failed=0
ok() { echo "ok    $*"; }
bad() { echo "FAIL  $*"; failed=1; }
en() { env -u LC_ALL -u LC_MESSAGES LANG=C.UTF-8 "$@"; }
zh() { env -u LC_ALL -u LC_MESSAGES LANG=zh_CN.UTF-8 "$@"; }

# 1. The two texts of every tr() that fmt() or printf() formats.
if out=$(python3 - chapters/checker_common.h chapters/*/checker.cpp <<'PY'
import re, sys
lit = r'"(?:[^"\\\n]|\\.)*"'
pair = re.compile(r'\btr\(\s*((?:' + lit + r'\s*)+),\s*((?:' + lit + r'\s*)+)\)')
conv = re.compile(r'%[-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfFgGaAcspn%]')
def text(lits): return "".join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', lits))
bad = n = 0
for f in sys.argv[1:]:
    src = open(f).read()
    for m in pair.finditer(src):
        before = src[:m.start()].rstrip()
        if not re.search(r'(fmt|printf)\($|sizeof buf,$|stderr,$', before): continue
        n += 1
        a, b = conv.findall(text(m.group(1))), conv.findall(text(m.group(2)))
        if a != b:
            bad += 1
            print(f"{f}: {a} vs {b} in {text(m.group(1))[:70]!r}")
print(f"{n} format strings")
sys.exit(1 if bad or n < 50 else 0)
PY
); then ok "the conversions of every translated format string match (${out##*$'\n'})"
else bad "translated format strings whose conversions differ:"; echo "$out" | sed 's/^/      /'; fi

# The renderings book/terms.tsv says to avoid appear in no checker.
avoided=$(awk -F'\t' 'NR > 1 && $3 != "" { n = split($3, a, "；"); for (i = 1; i <= n; i++) print a[i] }' book/terms.tsv)
hits=$(grep -noF -f <(echo "$avoided") chapters/checker_common.h chapters/*/checker.cpp)
[ -z "$hits" ] && ok "no checker uses a rendering book/terms.tsv avoids ($(echo "$avoided" | wc -l) checked)" \
    || { bad "renderings book/terms.tsv avoids:"; echo "$hits" | sed 's/^/      /'; }

# 2. Which language, from the command line and the locale: an unknown
# argument is refused at once, in the chosen language.
mkdir -p build/exercise
en make -s --no-print-directory exercise EX=rmsnorm >build/exercise/rmsnorm.zh-lang.log 2>&1
if grep -q "^NOT YET  rmsnorm" build/exercise/rmsnorm.zh-lang.log; then
    c=build/exercise/rmsnorm/check
    lang_of() { if "$@" --bogus 2>&1 | grep -q "不认识的参数"; then echo zh; else echo en; fi; }
    while read -r want how; do
        got=$(lang_of env -u LC_ALL -u LC_MESSAGES -u LANG $how)
        [ "$got" = "$want" ] && ok "language $want for: $how" || bad "language $got, not $want, for: $how"
    done <<EOF
en  $c
en  LANG=C.UTF-8 $c
zh  LANG=zh_CN.UTF-8 $c
zh  LANG=zh_TW $c
en  LANG=en_US.UTF-8 LC_MESSAGES=fr_FR.UTF-8 $c
zh  LANG=C.UTF-8 LC_MESSAGES=zh_CN.UTF-8 $c
en  LANG=zh_CN.UTF-8 LC_ALL=C.UTF-8 $c
zh  LANG=zh_CN.UTF-8 LC_ALL= $c
zh  LANG=C.UTF-8 $c --lang zh
en  LANG=zh_CN.UTF-8 $c --lang en
EOF
else bad "rmsnorm's stub should build and fail its checker, last lines of build/exercise/rmsnorm.zh-lang.log:"
    tail -15 build/exercise/rmsnorm.zh-lang.log | sed 's/^/      /'
fi

# 3. Every exercise's stub, in both languages.
exercises=${EXERCISES:-$(sed -n '/^table="/,/^"/p' chapters/build_exercise.sh | awk 'NF > 1 { print $1 }')}
for ex in $exercises; do
    d=build/exercise/$ex
    mkdir -p "$d"
    en make -s --no-print-directory exercise EX="$ex" JSON=1 >"$d/stub.en.json" 2>"$d/stub.zh-build.log"
    if ! grep -q '"exercise"' "$d/stub.en.json"; then bad "$ex: the stub did not build and run, last lines of $d/stub.zh-build.log:"
        tail -15 "$d/stub.zh-build.log" | sed 's/^/      /'; continue; fi
    zh "$d/check" --json >"$d/stub.zh.json" 2>/dev/null
    en "$d/check" >"$d/stub.en.txt" 2>&1
    zh "$d/check" >"$d/stub.zh.txt" 2>&1
    if why=$(python3 - "$d/stub.en.json" "$d/stub.zh.json" <<'PY'
import json, re, sys
e, z = (json.load(open(f)) for f in sys.argv[1:3])
cjk = re.compile(r'[\u4e00-\u9fff]')
problems = []
for k in ("exercise", "passed", "groups", "groups_passed", "points", "points_possible"):
    if e.get(k) != z.get(k): problems.append(f"{k}: {e.get(k)!r} in English, {z.get(k)!r} in Chinese")
if list(e) != list(z): problems.append(f"keys {list(e)} vs {list(z)}")
if "crash" in e and not cjk.search(z.get("crash", "")): problems.append("the crash's case is not named in Chinese")
er, zr = e.get("results", []), z.get("results", [])
if len(er) != len(zr): problems.append(f"{len(er)} groups in English, {len(zr)} in Chinese")
for i, (a, b) in enumerate(zip(er, zr)):
    for k in ("cases", "failed", "passed", "points", "points_possible"):
        if a[k] != b[k]: problems.append(f"group {i + 1}: {k} {a[k]} in English, {b[k]} in Chinese")
    if list(a) != list(b): problems.append(f"group {i + 1}: keys {list(a)} vs {list(b)}")
    if " " in b["group"] and not cjk.search(b["group"]):
        problems.append(f"group {i + 1}: its name is not in Chinese: {b['group']!r}")
    if not b["passed"] and not cjk.search(b["diagnosis"]):
        problems.append(f"group {i + 1} ({b['group']}): the Chinese diagnosis has no Chinese: {b['diagnosis'][:100]!r}")
    for line in b["diagnosis"].splitlines():  # the hint, the part that is the checker's own
        if "提示：" in line and not cjk.search(line.split("提示：", 1)[1]):
            problems.append(f"group {i + 1} ({b['group']}): a hint not in Chinese: {line.strip()[:100]!r}")
if e.get("passed") is not False: problems.append("the stub should fail")
print("\n".join(problems) if problems else f"{len(er)} groups, {e.get('points')} of {e.get('points_possible')} points")
sys.exit(1 if problems else 0)
PY
    ); then
        en_last=$(grep -v '^$' "$d/stub.en.txt" | tail -1) zh_last=$(grep -v '^$' "$d/stub.zh.txt" | tail -1)
        title=$(head -1 "$d/stub.zh.txt")  # in words, unless the English one is a formula (rmsnorm's)
        en_title=$(head -1 "$d/stub.en.txt")
        if [[ $title != "检查 $ex："* ]] || { echo "${en_title#"Checking $ex: "}" | grep -qE '[a-z]{2,} [a-z]{2,}' &&
                                               ! echo "${title#"检查 $ex："}" | grep -qP '\p{Han}'; }; then
            bad "$ex: the Chinese title is \"$title\""
        elif [[ $en_last == "NOT YET  $ex: "* || $en_last == "CRASH"* ]] && [[ $zh_last == "还没通过  $ex："* || $zh_last == "崩溃"* ]]; then
            ok "$ex: the stub fails alike in English and Chinese ($why)"
        else bad "$ex: the last lines: \"$en_last\" (English), \"$zh_last\" (Chinese)"; fi
    else bad "$ex: English and Chinese disagree:"; echo "$why" | sed 's/^/      /'; fi
done

# 4. The same diagnosis: for known slips (tests/data/exercise_slips/, which
# tests/check_exercises.sh has the English checkers name), the Chinese hint is
# the Chinese text written beside the English one the checker gives.
pairs=build/exercise/zh-pairs.json
python3 - chapters/checker_common.h chapters/*/checker.cpp >"$pairs" <<'PY'
import json, re, sys
lit = r'"(?:[^"\\\n]|\\.)*"'
lits = r'((?:' + lit + r'\s*)+)'
def text(l):
    s = "".join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', l))
    return re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), s)
pairs = {}
for f in sys.argv[1:]:
    src = open(f).read()
    for m in re.finditer(r'\btr\(\s*' + lits + r',\s*' + lits + r'\)', src): pairs[text(m.group(1))] = text(m.group(2))
    for m in re.finditer(r'\{\s*' + lits + r',\s*' + lits + r',\s*(?:q4_|K_SLIP)', src):  # q4's table of slips
        pairs[text(m.group(1))] = text(m.group(2))
json.dump(pairs, sys.stdout, ensure_ascii=False)
PY
while read -r ex file; do
    [ -n "$ex" ] || continue
    d=build/exercise/$ex log=build/exercise/$ex.slip.${file%.cpp}.zh.txt
    STUB=tests/data/exercise_slips/$file zh make -s --no-print-directory exercise EX="$ex" >"$log" 2>&1
    en "$d/check" >"$log.en" 2>&1
    if why=$(python3 - "$pairs" "$log.en" "$log" <<'PY'
import json, re, sys
pairs = json.load(open(sys.argv[1]))
en, zh = (open(f).read() for f in sys.argv[2:4])
def fail(why): print(why); sys.exit(1)
h_en = re.search(r'^      hint: (.*)$', en, re.M)
h_zh = re.search(r'^      提示：(.*)$', zh, re.M)
if not h_en or not h_zh: fail("no hint in one of them")
if "\nNOT YET  " not in en or "\n还没通过  " not in zh: fail("both should fail")
h_en, h_zh = h_en.group(1), h_zh.group(1)
want = pairs.get(h_en)
conv = r'%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z)?[diouxXeEfgGcs]'
def filled(e, z, text):  # a format pair: the arguments read from the English text, put into the Chinese
    parts = re.split("(" + conv + ")", e)  # the conversions at the odd indices
    m = re.fullmatch("".join("(.+?)" if i % 2 else re.escape(p) for i, p in enumerate(parts)), text)
    if not m: return None
    args = iter(m.groups())
    return re.sub(conv, lambda _: next(args), z)
for e, z in pairs.items():
    if want is None and "%" in e: want = filled(e, z, h_en)
if want is None: fail(f"the English hint is no tr() text: {h_en[:80]!r}")
if h_zh != want: fail(f"English: {h_en[:80]!r}\nChinese: {h_zh[:80]!r}\nexpected {want[:80]!r}")
print(h_zh[:24] + "...")
PY
    ); then ok "$ex: the slip in $file gets the same hint in Chinese ($why)"
    else bad "$ex: the slip in $file:"; echo "$why" | sed 's/^/      /'; fi
done <<EOF
rope   rope_intdiv.cpp
top-p  top_p_no_tiebreak.cpp
q8_0   q8_0_rint.cpp
tiled-matmul tiled_matmul_partials.cpp
layer  layer_no_bias.cpp
layer  layer_norm_in_place.cpp
layer  layer_no_ablate.cpp
scheduler scheduler_slot_order.cpp
q4     q4_k_no_top_bits.cpp
cuda-rope cuda_rope_no_bound.cpp
cuda-rope cuda_rope_shared_pair.cpp
lens   lens_no_norm.cpp
lens   lens_wrong_row.cpp
EOF

# 5. The real code passes in Chinese, through make exercise.
for ex in ${ZH_SOLUTIONS:-rmsnorm top-p scheduler}; do
    log=build/exercise/$ex.solution.zh.log
    zh make -s --no-print-directory exercise EX="$ex" SOLUTION=1 >"$log" 2>&1; rc=$?
    if [ $rc = 0 ] && grep -q "^通过  $ex：" "$log"; then ok "$ex: SOLUTION=1 passes, in Chinese"
    else bad "$ex: SOLUTION=1 should pass in Chinese (rc=$rc), last lines of $log:"; tail -15 "$log" | sed 's/^/      /'; fi
done
exit $failed
