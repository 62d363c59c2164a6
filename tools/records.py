#!/usr/bin/python3
"""Measurements are data: the records in book/records/*.jsonl and the appendix tables made from them.

Every measuring run the book cites is one record, one line of JSON, written by the tool that
measured (`./run bench --save`, `tools/bench_serve.py --save`) or transcribed from older prose
(book/records/transcribed.jsonl, whose records say in "source" where each came from and in
"missing" which fields were not kept). Fields, all present, unknown ones null:

  tool, date, cpu, machine, flags, cores, commit, command, load,
  figures  {"bandwidth_gbs", "fma_gflops_8", "fma_gflops_16"}: what the machine measured,
  rows     [{"engine": "lantern" | "llama.cpp", "test": "pp128" | "tg64" | "tg64@d4096" | ...,
             "depth", "weights", "kv", "kernels", "threads", "tok_s" (the median), "runs", ...}],
  source, missing (transcribed records only),
  check    "fnv1a64:<16 hex>", the last field: FNV-1a 64 over the line without it, so that a
           record changed by hand no longer verifies.

Tests are named as llama-bench names them: "pp512" the prefill of a 512-token prompt, "tg64" 64
decoded tokens, "tg64@d4096" the same after a context of 4096. Serving runs (tools/bench_serve.py)
use these: "serve1" (one client alone on the batching server), "serve8" (8 clients at once;
serveN for N), "serve8q" (8 clients queued on a --parallel 1 server); llama.cpp's
llama-batched-bench "batched1" and "batched8" (sequences, no HTTP). A serve8 row also carries
"speedup", its total tok/s over serve1's. A row may say "variant" (how its run differed from the
code of its day: a build before a change, a setting, a loaded machine; the tables show it after
the kernels) and "derived": true (a figure worked out from a printed ratio, in transcribed
records).

The appendix (book/A-measurements.md and its twin book/zh/A-measurements.md) holds the tables
between marker lines:
    <!-- records:begin machines -->  ...  <!-- records:end -->   the machines, from the records
    <!-- records:begin Zen 5 -->     ...  <!-- records:end -->   one machine's tables
    <!-- records:begin others -->     ...  <!-- records:end -->   every machine without a section of its own
Each table gives, per test, the median over the records and the range of every run in them,
llama.cpp beside Lantern where it was measured. How many words of prose the appendix may hold
is tools/book_limits.py's to check, as for every chapter.

Usage:
  /usr/bin/python3 tools/records.py --check     verify every record and that the tables are current
  /usr/bin/python3 tools/records.py --write     write the tables into the appendix
  /usr/bin/python3 tools/records.py --root DIR  (with either) work on a copy of the tree in DIR
tools/book_check.py runs the check as part of the book check.
"""
import glob
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = "book/records"
PAGES = {"book/A-measurements.md": "en", "book/zh/A-measurements.md": "zh"}
FIELDS = ("tool", "date", "cpu", "machine", "flags", "cores", "commit", "command", "load", "figures", "rows", "source")
FLAGS = ("avx2 fma f16c avx512f avx512bw avx512vl avx512_bf16 avx512_vnni avx512_fp16 "
         "amx_tile amx_bf16 amx_int8 asimd sve").split()
BEGIN = re.compile(r"^<!-- records:begin (.+?) -->$")
END = "<!-- records:end -->"
# Headings of a diary: a machine measured "again", "a third time", "the next day"... The appendix
# has one section a machine; a new measurement is a record, not a section.
DIARY = re.compile(r"\b(again|a (second|third|fourth|fifth) time|the (next|second|third|fourth|fifth) day)\b"
                   r"|再看|第[二三四五六]次|第[二三四五六]天|第二天", re.I)

WORDS = {
    "en": {"machine": "machine", "cpu": "CPU, as the runs recorded it", "cores": "cores", "flags": "vector instructions",
           "records": "records", "bw": "read bandwidth, GB/s", "fma8": "FMA peak 8 wide, GFLOP/s",
           "fma16": "FMA peak 16 wide, GFLOP/s",
           "test": "test", "weights": "weights", "kernels": "kernels", "threads": "threads",
           "lantern": "Lantern tok/s", "llama": "llama.cpp tok/s", "ratio": "ratio",
           "kernels_default": "default", "llama_avx2": " (AVX2 build)",
           "bench": "**%s, `./run bench`**, %d records.",
           "serve": "**%s, serving** (`tools/bench_serve.py`, total tok/s), %d records.",
           "clients1": "1 client alone", "clientsN": "%d clients at once", "queued": "%d clients, --parallel 1",
           "speedup": "speedup", "seq1": "llama.cpp 1 sequence", "seqN": "llama.cpp %d sequences",
           "none": "no records yet", "then": ", ", "no_others": "None yet: every machine measured has its section."},
    "zh": {"machine": "机器", "cpu": "CPU（运行时记录的名称）", "cores": "核数", "flags": "向量指令",
           "records": "记录数", "bw": "读带宽，GB/s", "fma8": "FMA 峰值（8 宽），GFLOP/s",
           "fma16": "FMA 峰值（16 宽），GFLOP/s",
           "test": "测试", "weights": "权重", "kernels": "核函数集", "threads": "线程",
           "lantern": "Lantern tok/s", "llama": "llama.cpp tok/s", "ratio": "比值",
           "kernels_default": "默认", "llama_avx2": "（AVX2 构建）",
           "bench": "**%s，`./run bench`**，%d 条记录。",
           "serve": "**%s，服务**（`tools/bench_serve.py`，总 tok/s），%d 条记录。",
           "clients1": "单独 1 个客户端", "clientsN": "%d 个客户端同时", "queued": "%d 个客户端，--parallel 1",
           "speedup": "加速比", "seq1": "llama.cpp 1 个序列", "seqN": "llama.cpp %d 个序列",
           "none": "尚无记录", "then": "，", "no_others": "暂无：测过的每台机器都有自己的一节。"},
}

# A row's "variant" says how its run differed from the code of its day (a build before a change, a
# setting, a loaded machine); the Chinese tables name the variants the records hold in Chinese.
VARIANTS_ZH = {
    "8 rows read as a prefill": "8 行按预填充读",
    "Q8_0 in the file's layout": "Q8_0 按文件中的布局",
    "before the attention tiles": "注意力分块之前",
    "before the block formats' stripes": "块格式的条带之前",
    "before the panels": "面板之前",
    "before the packed tiles' prefetch": "打包分块预取之前",
    "before the lane starts made once per product": "通道起始值每次乘积只算一次之前",
    "before the k-quant packing": "k-quant 打包之前",
    "before the AVX2 packed tile": "AVX2 打包分块之前",
    "before the prefetch ahead, equal token groups and polynomial SwiGLU": "提前预取、等大词元组和多项式 SwiGLU 之前",
    "before the stripes and token blocks": "条带和词元块之前",
    "before vector SwiGLU and KV blocks read in place": "向量化 SwiGLU 和原地读 KV 块之前",
    "before vector SwiGLU": "向量化 SwiGLU 之前",
    "before the decode chunks as GQA tiles": "解码分块按 GQA 分块计算之前",
    "every batch in stripes": "每个批次都按条带",
    "loaded": "有负载",
    "loaded, OMP_WAIT_POLICY=passive": "有负载，OMP_WAIT_POLICY=passive",
    "loaded, one-query attention": "有负载，一次一个查询的注意力",
    "loaded, one-query attention, axpy per key": "有负载，一次一个查询的注意力，每个键一次 axpy",
    "stepwise prefill": "逐词元预填充",
    "stripes up to 8 tokens": "条带至多 8 个词元",
}


# ----------------------------------------------------------------------------- the check

def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


CHECK_TAIL = re.compile(r',"check":"fnv1a64:([0-9a-f]{16})"\}$')


def line_of(record):
    """One record as its line: compact JSON, the fields in the spec's order, the check last."""
    rec = {k: record.get(k) for k in FIELDS}
    if record.get("source") is not None:
        rec["missing"] = record.get("missing") or []
    for k, v in record.items():          # anything else a tool adds, after the known fields
        if k not in rec and k != "check":
            rec[k] = v
    body = json.dumps(rec, ensure_ascii=False, separators=(",", ":"))
    return body[:-1] + ',"check":"fnv1a64:%s"}' % fnv1a64(body.encode("utf-8"))


def verify_line(line):
    """The record of one line, or a string saying why it does not verify."""
    m = CHECK_TAIL.search(line)
    if not m:
        return 'no check at its end (,"check":"fnv1a64:<16 hex>"})'
    body = line[:m.start()] + "}"
    if fnv1a64(body.encode("utf-8")) != m.group(1):
        return "its check does not verify: the record was changed by hand (a tool writes records; rerun it)"
    try:
        rec = json.loads(line)
    except ValueError as e:
        return "not JSON: %s" % e
    missing = [k for k in FIELDS if k not in rec]
    if missing:
        return "fields missing: %s (unknown ones are null)" % ", ".join(missing)
    if not isinstance(rec["rows"], list) or not rec["machine"]:
        return "no rows or no machine"
    for r in rec["rows"]:
        if not isinstance(r, dict) or r.get("engine") not in ("lantern", "llama.cpp") or not r.get("test") \
                or "tok_s" not in r or not (r["tok_s"] is None or isinstance(r["tok_s"], (int, float))):
            return "a row without engine (lantern or llama.cpp), test or tok_s (a number, or null when not " \
                   "measured): %s" % json.dumps(r)[:120]
    if rec["source"] is not None and not isinstance(rec.get("missing"), list):
        return 'a transcribed record (with "source") needs "missing": the fields not kept'
    return rec


# A tool's record is never edited, so a run that the code has since outrun
# is named in book/records/variants.tsv instead: "<commit>\t<variant>", every
# row of the records made at that commit (with changes or not) taking the
# variant, so that the tables keep them apart from the code of today.
VARIANTS_FILE = "book/records/variants.tsv"


def read_variants(root, records, problems):
    path = os.path.join(root, VARIANTS_FILE)
    if not os.path.exists(path):
        return
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not re.fullmatch(r"[0-9a-f]{7,40}", parts[0]) or not parts[1].strip():
            problems.append("%s:%d: not <commit>\\t<variant>: %r" % (VARIANTS_FILE, n, line))
            continue
        commit, variant = parts[0], parts[1].strip()
        hit = [r for r in records if (r.get("commit") or "").split("+")[0] == commit]
        if not hit:
            problems.append("%s:%d: no record was made at commit %s" % (VARIANTS_FILE, n, commit))
        if variant not in VARIANTS_ZH:
            problems.append("%s:%d: the variant %r has no Chinese name in tools/records.py:VARIANTS_ZH"
                            % (VARIANTS_FILE, n, variant))
        for r in hit:
            for x in r["rows"]:
                x.setdefault("variant", variant)


def read_records(root=ROOT):
    """(records, problems): every verified record of book/records/*.jsonl, with its file and line,
    and the variants of book/records/variants.tsv applied."""
    records, problems = [], []
    for path in sorted(glob.glob(os.path.join(root, RECORDS, "*.jsonl"))):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.rstrip("\n")
                if not line.strip():
                    continue
                rec = verify_line(line)
                if isinstance(rec, str):
                    problems.append("%s:%d: %s" % (rel, n, rec))
                else:
                    rec["_where"] = "%s:%d" % (rel, n)
                    rec["rows"] = [r for r in rec["rows"] if r["tok_s"] is not None]   # not measured: no cell
                    records.append(rec)
    read_variants(root, records, problems)
    return records, problems


# ----------------------------------------------------------------------------- writing one

def cpu_facts():
    """(cpu model name, the flags that matter, cores, vendor, family, model) from /proc/cpuinfo;
    None where not known."""
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return None, None, os.cpu_count(), None, None, None

    def field(name):
        m = re.search(r"^%s\s*:\s*(.+)$" % name, text, re.M)
        return m.group(1).strip() if m else None
    have = set((field("flags") or field("Features") or "").split())
    family, model = field("cpu family"), field("model")
    return (field("model name") or field("Model"), " ".join(f for f in FLAGS if f in have) or None, os.cpu_count(),
            field("vendor_id"), int(family) if family and family.isdigit() else None,
            int(model) if model and model.isdigit() else None)


def machine_label(cpu, flags, vendor=None, family=None, model=None):
    """The short label the tables group by: the microarchitecture for AMD (from the family and
    model), "Xeon (AMX)" or "Xeon" for Intel, else the model name. A tool may be told another."""
    cpu, flags = cpu or "", flags or ""
    if vendor == "AuthenticAMD" or "AMD" in cpu:
        zen = {23: "Zen 2", 26: "Zen 5"}.get(family)
        if family == 25:
            zen = "Zen 4" if model is not None and model >= 0x10 else "Zen 3"
        if zen:
            return zen
    if vendor == "GenuineIntel" or "Intel" in cpu:
        return "Xeon (AMX)" if "amx_tile" in flags else ("Xeon" if "Xeon" in cpu else cpu or "Intel")
    return cpu or "unknown"


def git_commit(root=ROOT):
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


def new_record(tool, command, rows, figures=None, machine=None):
    """A record of a run measured now, on this machine (the fields a tool fills itself)."""
    import time
    cpu, flags, cores, vendor, family, model = cpu_facts()
    return {"tool": tool, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpu": cpu,
            "machine": machine or machine_label(cpu, flags, vendor, family, model), "flags": flags, "cores": cores,
            "commit": git_commit(), "command": command, "load": round(os.getloadavg()[0], 2),
            "figures": figures or {"bandwidth_gbs": None, "fma_gflops_8": None, "fma_gflops_16": None},
            "rows": rows, "source": None}


def append_record(path, record):
    """Append one record to a .jsonl file (made with its folder if new); returns the line written."""
    line = line_of(record)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
    return line


# ----------------------------------------------------------------------------- the tables

def fmt(x):
    return "%.2f" % x if x < 10 else "%.1f" % x


def cell(values, unit=""):
    """'median (low–high)' of a list of (median, runs) pairs: the median of the medians, the range of
    every run (of the medians where a record kept no runs); '—' for none."""
    if not values:
        return "—"
    med = statistics.median(v for v, _ in values)
    every = [x for v, runs in values for x in (runs or [v])]
    lo, hi = min(every), max(every)
    if len(every) == 1 or lo == hi:
        return fmt(med) + unit
    return "%s%s (%s–%s%s)" % (fmt(med), unit, fmt(lo), fmt(hi), unit)


def test_key(test):
    m = re.match(r"([a-z]+)(\d*)(q?)(?:@d(\d+))?$", test)
    if not m:
        return (9, 0, 0, test)
    order = {"pp": 0, "tg": 1, "serve": 2, "batched": 3}.get(m.group(1), 8)
    return (order, int(m.group(4) or 0), int(m.group(2) or 0), test)


def llama_build(row):
    """Which llama.cpp a row is, or which one a Lantern row is compared with: its AVX2 build or the native one."""
    return "avx2" if "avx2" in (row.get("kernels") or "") or "avx2" in (row.get("build") or "") else "native"


def machines_table(records, lang, order=()):
    w = WORDS[lang]
    by = {}
    for r in records:
        by.setdefault(r["machine"], []).append(r)
    out = ["| %s | %s | %s | %s | %s | %s | %s | %s |" % (w["machine"], w["cpu"], w["cores"], w["flags"],
                                                           w["records"], w["bw"], w["fma8"], w["fma16"]),
           "|---|---|---:|---|---:|---:|---:|---:|"]

    def span(vals):
        vals = [v for v in vals if isinstance(v, (int, float))]
        if not vals:
            return "—"
        return fmt(min(vals)) if min(vals) == max(vals) else "%s–%s" % (fmt(min(vals)), fmt(max(vals)))
    for m in sorted(by, key=lambda m: (list(order).index(m) if m in order else len(order), m)):
        rs = by[m]
        cpus = sorted(set(r["cpu"] for r in rs if r["cpu"]))
        flags = sorted(set(r["flags"] for r in rs if r["flags"]), key=len)
        cores = sorted(set(r["cores"] for r in rs if r["cores"]))
        out.append("| %s | %s | %s | %s | %d | %s | %s | %s |" % (
            m, "; ".join(cpus) or "—", ", ".join(map(str, cores)) or "—", flags[-1] if flags else "—", len(rs),
            span(r["figures"].get("bandwidth_gbs") for r in rs if r["figures"]),
            span(r["figures"].get("fma_gflops_8") for r in rs if r["figures"]),
            span(r["figures"].get("fma_gflops_16") for r in rs if r["figures"])))
    return out


def machine_tables(records, machine, lang):
    w = WORDS[lang]
    rs = [r for r in records if r["machine"] == machine]
    bench = [r for r in rs if not any(x["test"].startswith(("serve", "batched")) for x in r["rows"])]
    serve = [r for r in rs if any(x["test"].startswith("serve") for x in r["rows"])]
    out = []
    if bench:
        lantern, llama = {}, {}
        for r in bench:
            for x in r["rows"]:
                kv = x.get("kv") if x.get("kv") not in (None, "f32") else ""  # a cheaper KV cache: a row of its own
                if x["engine"] == "lantern":
                    k = (x["test"], x.get("weights") or "", x.get("kernels") or "", x.get("threads") or 0,
                         x.get("variant") or "", kv)
                    lantern.setdefault(k, []).append((x["tok_s"], x.get("runs")))
                else:
                    k = (x["test"], x.get("weights") or "", llama_build(x), x.get("threads") or 0, x.get("variant") or "",
                         kv)
                    llama.setdefault(k, []).append((x["tok_s"], x.get("runs")))
        out += [(w["bench"] % (machine, len(bench))).replace(" 1 records.", " 1 record."), "",
                "| %s | %s | %s | %s | %s | %s | %s | %s |" % (w["test"], w["weights"], w["kernels"], w["threads"],
                                                                w["records"], w["lantern"], w["llama"], w["ratio"]),
                "|---|---|---|---:|---:|---:|---:|---:|"]
        for k in sorted(lantern, key=lambda k: (k[4] != "", k[4], test_key(k[0]), k[5], k[1], k[2], k[3])):
            test, weights, kernels, threads, variant, kv = k
            mine = lantern[k]
            theirs = llama.get((test, weights, llama_build({"kernels": kernels}), threads, variant, kv), [])
            if variant:
                kernels = (kernels or w["kernels_default"]) + w["then"] + (VARIANTS_ZH.get(variant, variant) if lang == "zh"
                                                                            else variant)
            ratio = "—"
            if theirs:
                ratio = "%.2fx" % (statistics.median(v for v, _ in mine) / statistics.median(v for v, _ in theirs))
            out.append("| %s | %s | %s | %s | %d | %s | %s | %s |" % (
                test + (", KV " + kv if kv else ""), weights or "—", kernels or w["kernels_default"], threads or "—",
                len(mine), cell(mine),
                cell(theirs) + (w["llama_avx2"] if theirs and kernels and "avx2" in kernels else ""), ratio))
        out.append("")
    if serve:
        groups = {}
        for r in serve:
            x = next(x for x in r["rows"] if x["engine"] == "lantern")
            ks = (x.get("kernels") or "", x.get("variant") or "")
            g = groups.setdefault(ks, {})
            for x in r["rows"]:
                g.setdefault(x["test"], []).append(x)
        out += [(w["serve"] % (machine, len(serve))).replace(" 1 records.", " 1 record."), ""]
        n = max((int(t[5:]) for g in groups.values() for t in g if re.fullmatch(r"serve\d+", t) and t != "serve1"),
                default=8)
        cols = [("serve1", w["clients1"]), ("serve%d" % n, w["clientsN"] % n), ("speedup", w["speedup"]),
                ("serve%dq" % n, w["queued"] % n), ("batched1", w["seq1"]), ("batched%d" % n, w["seqN"] % n),
                ("bspeedup", "llama.cpp " + w["speedup"])]
        table = []
        for ks in sorted(groups, key=lambda k: (k[1] != "", k)):
            g = groups[ks]
            cells = []
            for t, _ in cols:
                if t == "speedup":
                    cells.append(cell([(x["speedup"], x.get("speedup_runs")) for x in g.get("serve%d" % n, [])
                                       if x.get("speedup")], "x"))
                elif t == "bspeedup":
                    cells.append(cell([(x["speedup"], None) for x in g.get("batched%d" % n, []) if x.get("speedup")], "x"))
                else:
                    cells.append(cell([(x["tok_s"], x.get("runs")) for x in g.get(t, [])]))
            name = ks[0] or w["kernels_default"]
            if ks[1]:
                name += w["then"] + (VARIANTS_ZH.get(ks[1], ks[1]) if lang == "zh" else ks[1])
            table.append([name, str(len(g.get("serve%d" % n, [])))] + cells)
        keep = [i for i in range(len(cols)) if any(r[2 + i] != "—" for r in table)]
        out.append("| %s | %s | %s |" % (w["kernels"], w["records"], " | ".join(cols[i][1] for i in keep)))
        out.append("|---|---:|" + "---:|" * len(keep))
        for r in table:
            out.append("| %s | %s | %s |" % (r[0], r[1], " | ".join(r[2 + i] for i in keep)))
        out.append("")
    if not out:
        out = [w["none"], ""]
    return out


def generate(text, records, lang):
    """The page with every marked section written anew from the records."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        while i < len(lines) and lines[i] != END:
            i += 1
        what = m.group(1)
        order = [BEGIN.match(l).group(1) for l in lines if BEGIN.match(l)]
        if what == "machines":
            body = machines_table(records, lang, order) + [""]
        elif what == "others":
            others = sorted(set(r["machine"] for r in records) - set(order))
            body = [x for o in others for x in machine_tables(records, o, lang)] or [WORDS[lang]["no_others"], ""]
        else:
            body = machine_tables(records, what, lang)
        out += [""] + body
        if i < len(lines):
            out.append(lines[i])
            i += 1
    return "\n".join(out)


def check(root=ROOT, write=False):
    """Problems as 'FILE:LINE: what' lines (empty: all is well). With write, the tables are written first."""
    records, problems = read_records(root)
    machines = set(r["machine"] for r in records)
    shown = set()
    for page, lang in PAGES.items():
        path = os.path.join(root, page)
        if not os.path.isfile(path):
            problems.append("%s: missing" % page)
            continue
        text = open(path, encoding="utf-8").read()
        for n, line in enumerate(text.split("\n"), 1):
            m = BEGIN.match(line)
            if m:
                shown.add(m.group(1))
                if m.group(1) not in ("machines", "others") and m.group(1) not in machines:
                    problems.append("%s:%d: no record is of the machine %r" % (page, n, m.group(1)))
            if line.startswith("#") and DIARY.search(line):
                problems.append("%s:%d: a heading of a diary (%s): the appendix has one section a machine, "
                                "and a new measurement is a record" % (page, n, line.strip()))
        new = generate(text, records, lang)
        if write and new != text:
            open(path, "w", encoding="utf-8").write(new)
        elif new != text:
            old_lines, new_lines = text.split("\n"), new.split("\n")
            n = next((k for k, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b), min(len(old_lines), len(new_lines)))
            problems.append("%s:%d: the tables differ from what the records give (tools/records.py --write "
                            "writes them; edit the records' tools, not the tables)" % (page, n + 1))
    return problems


def main(argv):
    root, write = ROOT, False
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--root" and args:
            root = os.path.abspath(args.pop(0))
        elif a == "--write":
            write = True
        elif a == "--check":
            pass
        else:
            print(__doc__.split("Usage:")[1].strip(), file=sys.stderr)
            return 2
    problems = check(root, write)
    for p in problems:
        print(p)
    records, _ = read_records(root)
    print("records: %d records, %d problems" % (len(records), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
