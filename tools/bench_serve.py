# tools/bench_serve.py — what continuous batching buys, measured in one run.
#
#   python3 tools/bench_serve.py [MODEL] [--threads 2] [--clients 8] [--tokens 64] [--kernels SET] [--save [FILE]]
#
# Starts `./run serve MODEL --parallel 1` (one request at a time) and sends
# it CLIENTS streaming requests at once; then a `--parallel CLIENTS` server,
# which gets one request alone and then the CLIENTS at once (greedy,
# max_tokens TOKENS; the counts are the completion_tokens the server
# reports, in case a stop token comes first). Each client is timed from its
# request to its last token. Prints, for each burst: total tokens/s over
# the whole burst, and per client the time to first token and its own
# decode tokens/s (median and p90); then the batching speedup, CLIENTS at
# once against one client alone on the same server. Each server first
# answers one request that is not timed (serve says why). The servers run one
# after the other on the same machine, so other load on it disturbs all.
# On the --parallel CLIENTS server the two bursts alternate ROUNDS times
# (--rounds, default 3): one client alone, the CLIENTS at once, again and
# again, and the speedup is the ratio of the two medians, so that a
# moment when the machine reads memory slower (a shared machine's
# bandwidth moves by a third from minute to minute) weighs on both sides.
#
# llama.cpp, between the two: its llama-batched-bench (build/llama.cpp/bin,
# built natively from the source node-llama-cpp ships) decodes 1 and then
# CLIENTS sequences of TOKENS tokens after a prompt of the same length as
# ours, on the same weights as a bf16 GGUF (./run convert, cached in
# build/bench/). It measures the model alone, with no HTTP; without the
# binary its line says "not measured".
#
# --kernels SET starts both servers with that kernel set (./run serve
# --kernels): `bf16dot` multiplies bf16 weights by activations rounded to
# bf16, the arithmetic llama-batched-bench does on a bf16 GGUF, so the two
# engines' batching then compare like for like. The default, fast, is the
# exact set.
#
# --save [FILE] appends the run as one record to FILE (default book/records/serve.jsonl;
# tools/records.py says what a record holds): every figure printed, the machine and the commit.
# The appendix's serving tables are made from these records.
import http.client, itertools, json, os, re, statistics, subprocess, sys, threading, time

args = sys.argv[1:]
model = args.pop(0) if args and not args[0].startswith("--") else "models/qwen2.5-0.5b"
opt = {"--threads": "2", "--clients": "8", "--tokens": "64", "--rounds": "3", "--kernels": "fast"}
save = None
while args:
    k = args.pop(0)
    if k == "--save":
        save = args.pop(0) if args and not args[0].startswith("--") else "book/records/serve.jsonl"
        continue
    if k not in opt or not args:
        sys.exit("usage: python3 tools/bench_serve.py [MODEL] [--threads N] [--clients N] [--tokens N] [--rounds N] "
                 "[--kernels SET] [--save [FILE]]")
    opt[k] = args.pop(0)
kernels = opt.pop("--kernels")  # ./run serve checks the name
for k, v in opt.items():
    if not v.isdigit() or int(v) < 1:
        sys.exit("bench_serve: %s %s: a whole number of at least 1" % (k, v))
threads, clients, tokens, rounds = (int(opt[k]) for k in ("--threads", "--clients", "--tokens", "--rounds"))

def start(parallel):
    if not os.access("./run", os.X_OK):
        sys.exit("bench_serve: ./run is not here (run make first, from the repository's top folder)")
    log = open("/tmp/bench_serve_%d.log" % os.getpid(), "w+")
    p = subprocess.Popen(["./run", "serve", model, "--port", "0", "--threads", str(threads), "--parallel", str(parallel),
                          "--ctx", "512", "--queue", str(clients), "--kernels", kernels], stderr=log)
    for _ in range(600):
        log.seek(0)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read())
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            break
        time.sleep(0.1)
    p.kill()
    log.seek(0)
    sys.exit("the server did not start:\n" + log.read()[-2000:])

def client(port, i, out, question):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    body = {"messages": [{"role": "user", "content": "Question %d: tell me a story." % question}], "max_tokens": tokens,
            "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
    t0 = time.time()
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    first, n, prompt_n = None, 0, 0
    for line in r:
        line = line.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        ev = json.loads(line[6:])
        if ev.get("usage"):
            n = ev["usage"]["completion_tokens"]
            prompt_n = ev["usage"]["prompt_tokens"]
        elif ev["choices"] and ev["choices"][0].get("delta", {}).get("content") and first is None:
            first = time.time()
    end = time.time()
    out[i] = {"ttft": (first or end) - t0, "n": n, "tps": (n - 1) / (end - first) if first and n > 1 and end > first else 0,
              "start": t0, "end": end, "prompt": prompt_n}

questions = itertools.count()  # each request its own question number: no prompt is a cached prefix of an earlier one

def burst(port, n_clients):
    out = [None] * n_clients
    ts = [threading.Thread(target=client, args=(port, i, out, next(questions))) for i in range(n_clients)]
    for t in ts: t.start()
    for t in ts: t.join()
    total = sum(o["n"] for o in out)
    span = max(o["end"] for o in out) - min(o["start"] for o in out)
    return {"total_tps": total / span, "tokens": total, "span": span,
            "ttft": sorted(o["ttft"] for o in out), "tps": sorted(o["tps"] for o in out),
            "prompt_tokens": max(o["prompt"] for o in out)}

def serve(parallel, bursts):
    """Start a server with --parallel `parallel` and send it each burst (a count of clients), one after the other."""
    p, port = start(parallel)
    try:
        # One request first, not timed: a server's first forward also brings the
        # model's pages into its page table, which would count against
        # whichever burst came first (the one client alone, in the speedup).
        burst(port, 1)
        return [burst(port, n) for n in bursts]
    finally:
        p.terminate()
        p.wait()

def llama_batched(prompt_tokens):
    """Decode tok/s of llama-batched-bench for 1 and for `clients` sequences, or why not measured."""
    bin = "build/llama.cpp/bin/llama-batched-bench"
    if not os.access(bin, os.X_OK):
        return None, "not measured (%s is not built)" % bin
    gguf = "build/bench/" + model.replace("/", "_") + "-bf16.gguf"
    if not os.path.exists(gguf):
        os.makedirs("build/bench", exist_ok=True)
        if subprocess.run(["./run", "convert", model, gguf, "--type", "bf16"], capture_output=True).returncode != 0:
            return None, "not measured (./run convert to a bf16 GGUF failed)"
    out = subprocess.run([bin, "-m", gguf, "-t", str(threads), "-c", "4096", "-b", "512", "-ub", "512",
                          "-npp", str(prompt_tokens), "-ntg", str(tokens), "-npl", "1,%d" % clients],
                         capture_output=True, text=True)
    tg = {}  # sequences -> decode tok/s (S_TG: generated tokens of all sequences / decode time)
    for line in (out.stdout + out.stderr).splitlines():  # the table: | PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | ...
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) >= 8 and cols[2].isdigit():
            tg[int(cols[2])] = float(cols[7])
    if 1 not in tg or clients not in tg:
        return None, "not measured (llama-batched-bench said: %s)" % (out.stderr.strip().splitlines() or ["nothing"])[-1]
    return tg, ""

def p90(xs):
    return xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]

load_at_start = os.getloadavg()[0]
print("bench_serve: %s, %d threads, kernels %s, %d streaming clients x %d tokens (greedy); machine: %s, %d cores, load %.1f" %
      (model, threads, kernels, clients, tokens, open("/proc/cpuinfo").read().split("model name")[1].split(":")[1].split("\n")[0].strip()
       if os.path.exists("/proc/cpuinfo") else "?", os.cpu_count(), os.getloadavg()[0]))
def show(label, r):
    print("%-22s total %6.1f tok/s (%d tokens in %.1f s) | TTFT median %.2f s p90 %.2f s | "
          "per client median %.1f tok/s p90 %.1f tok/s" % (label, r["total_tps"], r["tokens"], r["span"],
          statistics.median(r["ttft"]), p90(r["ttft"]), statistics.median(r["tps"]), p90(r["tps"])), flush=True)

# The honest baseline of batching is one client alone on the same server,
# timed from its request to its last token like each of the CLIENTS: what
# one user gets on an idle server. A --parallel 1 server with CLIENTS
# queued requests is shown too; its ratio reads higher because its
# clients also wait in the queue.
queued = serve(1, [clients])[0]
show("--parallel 1, %d queued" % clients, queued)
tg, why = llama_batched(queued["prompt_tokens"])
if tg:
    print("llama.cpp llama-batched-bench (bf16 GGUF, %d threads, no HTTP): decode 1 sequence %.1f tok/s, "
          "%d sequences %.1f tok/s in all: %.2fx" % (threads, tg[1], clients, tg[clients], tg[clients] / tg[1]), flush=True)
else:
    print("llama.cpp llama-batched-bench: " + why, flush=True)
runs = serve(clients, [1, clients] * rounds)
alones, togethers = runs[0::2], runs[1::2]
for i in range(rounds):
    show("--parallel %d, 1 client" % clients, alones[i])
    show("--parallel %d, %d clients" % (clients, clients), togethers[i])
alone_tps = statistics.median(r["total_tps"] for r in alones)
together_tps = statistics.median(r["total_tps"] for r in togethers)
print("batching speedup (total tok/s of %d clients at once vs 1 client alone, same server, medians of %d alternated rounds): "
      "%.2fx (%.1f vs %.1f tok/s; each round: %s)" % (clients, rounds, together_tps / alone_tps, together_tps, alone_tps,
      " ".join("%.2fx" % (t["total_tps"] / a["total_tps"]) for a, t in zip(alones, togethers))))
print("  (vs the --parallel 1 server with %d queued clients: %.2fx)" % (clients, together_tps / queued["total_tps"]))
print("(p90 of per-client tok/s is the 90th percentile value; the machine may be shared: compare the ratio, not the absolute numbers)")

if save:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import records

    def burst_figures(rs):
        """A burst's printed figures, the median over its rounds where there are several."""
        return {"ttft_median_s": round(statistics.median(statistics.median(r["ttft"]) for r in rs), 3),
                "ttft_p90_s": round(statistics.median(p90(r["ttft"]) for r in rs), 3),
                "client_tok_s_median": round(statistics.median(statistics.median(r["tps"]) for r in rs), 2),
                "client_tok_s_p90": round(statistics.median(p90(r["tps"]) for r in rs), 2),
                "tokens": [r["tokens"] for r in rs], "span_s": [round(r["span"], 2) for r in rs]}

    def lantern(test, tok_s, runs, rs, **more):
        row = {"engine": "lantern", "test": test, "depth": 0, "weights": None, "kv": None,
               "kernels": None if kernels == "fast" else kernels, "threads": threads, "tok_s": round(tok_s, 2),
               "runs": [round(x, 2) for x in runs], "clients": int(test[5:].rstrip("q")), "max_tokens": tokens,
               "prompt_tokens": max(r["prompt_tokens"] for r in rs)}
        row.update(burst_figures(rs))
        row.update(more)
        return row
    rows = [lantern("serve%dq" % clients, queued["total_tps"], [queued["total_tps"]], [queued], parallel=1),
            lantern("serve1", alone_tps, [r["total_tps"] for r in alones], alones, parallel=clients),
            lantern("serve%d" % clients, together_tps, [r["total_tps"] for r in togethers], togethers, parallel=clients,
                    speedup=round(together_tps / alone_tps, 3),
                    speedup_runs=[round(t["total_tps"] / a["total_tps"], 3) for a, t in zip(alones, togethers)],
                    speedup_vs_queued=round(together_tps / queued["total_tps"], 3))]
    if tg:
        for n in (1, clients):
            row = {"engine": "llama.cpp", "test": "batched%d" % n, "depth": queued["prompt_tokens"], "weights": "bf16",
                   "kv": None, "kernels": None, "threads": threads, "tok_s": tg[n], "runs": None, "sequences": n}
            if n == clients:
                row["speedup"] = round(tg[clients] / tg[1], 3)
            rows.append(row)
    rec = records.new_record("bench_serve", " ".join(["python3", "tools/bench_serve.py"] + sys.argv[1:]), rows)
    rec["load"] = round(load_at_start, 2)
    rec["model"] = model
    records.append_record(save, rec)
    print("saved: one record appended to %s" % save)
