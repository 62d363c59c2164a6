#!/usr/bin/python3
"""Trains Lantern's default model: a tiny Qwen2 on the King James Bible, on one CPU thread.

    /usr/bin/python3 tools/train.py --corpus build/kjv/corpus.txt \
        --tokenizer build/kjv/tokenizer.json --out trained/kjv --minutes 50

(`make train MINUTES=50` runs the whole pipeline: tools/make_corpus.sh, then
tools/train_tokenizer.js, then this.) The model is tools/qwen2_torch.py:Qwen2 -- the same module
the C++ engine is checked against. The run is limited by time, not by steps: the learning-rate
schedule (warmup, then cosine decay) is a function of the fraction of the time budget used.
Time is this process's CPU time, not the wall clock: on a machine shared with other jobs the
run takes longer but does the same amount of work, so MINUTES=50 means fifty minutes of one
CPU thread wherever it runs -- unless the wall clock reaches --max-wall-minutes (default twice
MINUTES) first; the schedule follows whichever budget is further used up. Every few minutes it measures validation bits per character, appends to
OUT/train_log.csv, saves a checkpoint and exports the Hugging Face folder, so a killed run
still leaves a usable model. At the end it writes OUT/loss.svg and OUT/TRAINING.md.
"""
import argparse
import hashlib
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # BLAS threads: see --threads
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen2_torch import Qwen2, write_safetensors  # noqa: E402
import plot_loss  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VAL_EVERY = 20            # verse i is validation when i % 20 == 19 (as in train_tokenizer.js)
SYSTEM_PROMPTS = [None, "You are a helpful assistant.",
                  "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."]
# Like Qwen2.5's template (and Lantern's tokenizer.cpp), a conversation without a system turn
# gets Qwen's default one; training showed the model all three SYSTEM_PROMPTS.
DEFAULT_SYSTEM = SYSTEM_PROMPTS[2]
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if loop.first and message['role'] != 'system' %}"
    "{{- '<|im_start|>system\\n' + DEFAULT_SYSTEM + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    ).replace("DEFAULT_SYSTEM", "'" + DEFAULT_SYSTEM + "'")


# ----------------------------------------------------------------------------- data

def split_verses(corpus_path):
    with open(corpus_path, encoding="utf-8") as f:
        verses = [l.rstrip("\n") for l in f if l.strip()]
    train = [v for i, v in enumerate(verses) if i % VAL_EVERY != VAL_EVERY - 1]
    val = [v for i, v in enumerate(verses) if i % VAL_EVERY == VAL_EVERY - 1]
    return train, val


def plain_docs(verses, per_doc=200):
    """The text as it is: verses, one per line. Cut into pieces only so the encoder gets
    manageable strings; a piece ends with its newline, which is a pre-token boundary."""
    return ["".join(v + "\n" for v in verses[i:i + per_doc]) for i in range(0, len(verses), per_doc)]


def chat(user, assistant, system):
    s = "" if system is None else "<|im_start|>system\n%s<|im_end|>\n" % system
    return s + "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n%s<|im_end|>\n" % (user, assistant)


def chat_docs(verses, rng):
    """One ChatML conversation per training verse, so that a chat-templated prompt (what
    `./run` sends without --raw) gets verses back. The user's turn is either the opening words
    of a verse (the assistant writes the verse and the next one or two) or one word from it
    (the assistant answers with verses that contain it)."""
    docs = []
    for i, v in enumerate(verses):
        words = v.split()
        answer = "\n".join(verses[i:i + rng.randint(1, 3)])
        if rng.random() < 0.6 or len(words) < 4:
            user = " ".join(words[:rng.randint(2, min(6, len(words)))]).rstrip(",;:.?!")
        else:
            long_words = [w.strip(",;:.?!()'") for w in words if len(w.strip(",;:.?!()'")) >= 5]
            user = rng.choice(long_words) if long_words else " ".join(words[:3])
        docs.append(chat(user, answer, rng.choice(SYSTEM_PROMPTS)))
    return docs


def encode(tokenizer_json, docs, work):
    """Encodes strings with Hugging Face's tokenizer (npm, via tools/train_tokenizer.js)."""
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        src, dst = os.path.join(tmp, "docs.json"), os.path.join(tmp, "ids.bin")
        with open(src, "w") as f:
            json.dump(docs, f)
        subprocess.run(["node", os.path.join(ROOT, "tools", "train_tokenizer.js"), "encode",
                        tokenizer_json, src, dst], check=True)
        raw = open(dst, "rb").read()
    out, pos = [], 0
    while pos < len(raw):
        n = int.from_bytes(raw[pos:pos + 4], "little")
        out.append(np.frombuffer(raw, dtype="<u2", count=n, offset=pos + 4).astype(np.int64))
        pos += 4 + 2 * n
    assert len(out) == len(docs)
    return out


def token_bytes(tokenizer_json):
    """Bytes of text each token id stands for (0 for special tokens): a byte-level token's
    string has one character per byte, so this is just the string's length."""
    tok = json.load(open(tokenizer_json))
    n = max(tok["model"]["vocab"].values()) + 1 + len(tok["added_tokens"])
    lens = np.zeros(n, dtype=np.int64)
    for s, i in tok["model"]["vocab"].items():
        lens[i] = len(s)
    return lens


def byte_decoder(tokenizer_json):
    """id -> bytes, for printing samples (the inverse of the byte-level map)."""
    tok = json.load(open(tokenizer_json))
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    char_to_byte = {chr(c): b for b, c in zip(bs, cs)}
    table = {i: bytes(char_to_byte[ch] for ch in s) for s, i in tok["model"]["vocab"].items()}
    for t in tok["added_tokens"]:
        table[t["id"]] = t["content"].encode()
    return lambda ids: b"".join(table[i] for i in ids).decode("utf-8", "replace")


# ----------------------------------------------------------------------------- training

def lr_at(step, frac, peak, warmup, min_ratio):
    """Linear warmup over the first steps, then cosine decay to min_ratio*peak as the time
    budget is used up (frac = elapsed / budget)."""
    if step < warmup:
        return peak * (step + 1) / warmup
    frac = min(max(frac, 0.0), 1.0)
    return peak * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * frac)))


def get_batch(plain, chat_stream, chat_starts, batch, ctx, chat_frac, rng):
    rows = []
    for _ in range(batch):
        if chat_stream is not None and rng.random() < chat_frac:
            s = chat_starts[rng.randrange(len(chat_starts))]
            s = min(s, len(chat_stream) - ctx - 1)
            rows.append(chat_stream[s:s + ctx + 1])
        else:
            s = rng.randrange(len(plain) - ctx - 1)
            rows.append(plain[s:s + ctx + 1])
    x = torch.from_numpy(np.stack(rows))
    return x[:, :-1], x[:, 1:]


@torch.no_grad()
def evaluate(model, val, tbytes, ctx, batch=16):
    """Validation loss over every token of the held-out verses (each scored once, with up to
    ctx tokens of context), as nats per token and bits per character."""
    model.eval()
    windows = [val[s:s + ctx + 1] for s in range(0, len(val) - 1, ctx)]
    nats, ntok, nbytes = 0.0, 0, 0
    for i in range(0, len(windows), batch):
        group = windows[i:i + batch]
        for w in group:
            x = torch.from_numpy(w[:-1])[None]
            y = torch.from_numpy(w[1:])[None]
            logits = model(x)
            nats += F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1),
                                    reduction="sum").item()
            ntok += y.numel()
            nbytes += int(tbytes[w[1:]].sum())
    model.train()
    return nats / ntok, nats / math.log(2) / nbytes


@torch.no_grad()
def sample(model, ids, n, temperature, top_k, seed, stop_ids=()):
    """Plain sampling without a KV cache (the model is small): temperature 0 means greedy."""
    model.eval()
    g = torch.Generator().manual_seed(seed)
    ids = list(ids)
    ctx = model.config["max_position_embeddings"]
    out = []
    for _ in range(n):
        logits = model(torch.tensor([ids[-ctx:]]))[0, -1]
        if temperature <= 0:
            t = int(logits.argmax())
        else:
            logits = logits / temperature
            if top_k:
                kth = torch.topk(logits, top_k).values[-1]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            t = int(torch.multinomial(torch.softmax(logits, -1), 1, generator=g))
        if t in stop_ids:
            break
        ids.append(t)
        out.append(t)
    model.train()
    return out


# ----------------------------------------------------------------------------- export

def model_config(args, vocab, specials):
    return {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": args.hidden,
        "intermediate_size": args.intermediate,
        "num_hidden_layers": args.layers,
        "num_attention_heads": args.heads,
        "num_key_value_heads": args.kv_heads,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "vocab_size": vocab,
        "tie_word_embeddings": True,
        "max_position_embeddings": args.ctx,
        "max_window_layers": args.layers,
        "use_sliding_window": False,
        "sliding_window": args.ctx,
        "attention_dropout": 0.0,
        "initializer_range": 0.02,
        "bos_token_id": specials["<|endoftext|>"],
        "eos_token_id": specials["<|im_end|>"],
        "torch_dtype": "bfloat16",
        "use_cache": True,
    }


def export(model, config, specials, args, tokenizer_json):
    out = args.out
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "model.safetensors"), model.state_dict(),
                      metadata={"format": "pt"}, dtype="BF16")
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    gen = {"bos_token_id": specials["<|endoftext|>"],
           "eos_token_id": [specials["<|im_end|>"], specials["<|endoftext|>"]],
           "pad_token_id": specials["<|endoftext|>"],
           "do_sample": True, "temperature": 0.8, "top_k": 40, "top_p": 0.95,
           "repetition_penalty": 1.1}
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=2)
        f.write("\n")
    if os.path.abspath(tokenizer_json) != os.path.abspath(os.path.join(out, "tokenizer.json")):
        shutil.copyfile(tokenizer_json, os.path.join(out, "tokenizer.json"))
    write_tokenizer_config(out, specials, args.ctx)
    words = os.path.join(os.path.dirname(os.path.abspath(args.corpus)), "words.txt")
    if os.path.exists(words):
        shutil.copyfile(words, os.path.join(out, "words.txt"))


def write_tokenizer_config(out, specials, ctx):
    added = {str(i): {"content": c, "lstrip": False, "normalized": False, "rstrip": False,
                      "single_word": False, "special": True}
             for c, i in sorted(specials.items(), key=lambda kv: kv[1])}
    tcfg = {"add_bos_token": False, "add_prefix_space": False, "added_tokens_decoder": added,
            "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
            "bos_token": None, "chat_template": CHAT_TEMPLATE,
            "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>",
            "errors": "replace", "model_max_length": ctx, "pad_token": "<|endoftext|>",
            "split_special_tokens": False, "tokenizer_class": "Qwen2Tokenizer", "unk_token": None}
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(tcfg, f, indent=2)
        f.write("\n")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def param_table(model):
    rows, total = [], 0
    for name, p in model.named_parameters():
        rows.append((name, tuple(p.shape), p.numel()))
        total += p.numel()
    return rows, total


def write_training_md(args, model, stats, samples):
    rows, total = param_table(model)
    L = []
    L.append("# The default model: a tiny Qwen2 trained on the King James Bible\n")
    L.append("Made by `make train MINUTES=%g`, i.e.\n" % args.minutes)
    L.append("```sh\n"
             "bash tools/make_corpus.sh build/kjv/corpus.txt\n"
             "node tools/train_tokenizer.js train build/kjv/corpus.txt build/kjv 4096\n"
             "nice /usr/bin/python3 tools/train.py --corpus build/kjv/corpus.txt "
             "--tokenizer build/kjv/tokenizer.json --out trained/kjv --minutes %g\n```\n" % args.minutes)
    L.append("| | |\n|---|---|")
    L.append("| corpus | `bible -f gen1:1-rev22:21` (Debian `bible-kjv`), references stripped, one verse per line |")
    L.append("| corpus sha256 | `%s` |" % stats["corpus_sha256"])
    L.append("| corpus size | %d verses, %d bytes; every 20th verse held out (%d validation verses) |"
             % (stats["verses"], stats["corpus_bytes"], stats["val_verses"]))
    L.append("| tokenizer | byte-level BPE, %d ids (256 bytes + %d merges + 3 ChatML specials), "
             "%.2f characters per token on the training text |"
             % (stats["vocab"], stats["vocab"] - 259, stats["chars_per_token"]))
    L.append("| model | Qwen2, hidden %d, %d layers, %d heads / %d KV heads, MLP %d, context %d, tied embeddings |"
             % (args.hidden, args.layers, args.heads, args.kv_heads, args.intermediate, args.ctx))
    L.append("| parameters | %s |" % format(total, ","))
    L.append("| training | %s; batch %d x %d tokens, AdamW (peak lr %g, warmup %d steps, cosine to %g x), "
             "%d%% of rows ChatML conversations, seed %d |"
             % ("%.1f minutes of CPU time on 1 thread (%.1f minutes of wall clock), %d steps, %s tokens"
                % (stats["minutes"], stats["wall_minutes"], stats["steps"], format(stats["tokens"], ",")),
                args.batch, args.ctx, args.lr, args.warmup, args.min_lr_ratio,
                round(100 * args.chat_frac), args.seed))
    L.append("| final training loss | %.4f nats/token (mean of the last 100 steps) |" % stats["train_loss"])
    L.append("| final validation | %.4f nats/token, **%.4f bits per character** (float32 weights) |"
             % (stats["val_loss"], stats["val_bpc"]))
    L.append("| after rounding to BF16 | %.4f bits per character (what `model.safetensors` holds) |"
             % stats["val_bpc_bf16"])
    L.append("| model.safetensors | %s bytes, sha256 `%s` |"
             % (format(stats["model_bytes"], ","), stats["model_sha256"]))
    L.append("")
    L.append("![loss curve](loss.svg)\n")
    L.append("The log behind the curve is `train_log.csv` (minutes, step, tokens, lr, train and "
             "validation loss). Samples written by the trained weights at the end of training "
             "(`tools/train.py:sample`, no KV cache, top-k 40):\n")
    for title, text in samples:
        L.append("**%s**\n\n```text\n%s\n```\n" % (title, text.strip("\n")))
    L.append("Parameters by tensor (one layer shown; the other %d are the same):\n" % (args.layers - 1))
    L.append("| tensor | shape | count |\n|---|---|---:|")
    for name, shape, n in rows:
        if ".layers." in name and ".layers.0." not in name:
            continue
        L.append("| `%s` | %s | %s |" % (name, "x".join(map(str, shape)), format(n, ",")))
    L.append("")
    with open(os.path.join(args.out, "TRAINING.md"), "w") as f:
        f.write("\n".join(L))


# ----------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default="build/kjv/corpus.txt")
    ap.add_argument("--tokenizer", default="build/kjv/tokenizer.json")
    ap.add_argument("--out", default="trained/kjv")
    ap.add_argument("--work", default="build/kjv", help="checkpoints and encoded data")
    ap.add_argument("--minutes", type=float, default=float(os.environ.get("MINUTES", "50")),
                    help="training budget in minutes of CPU time")
    ap.add_argument("--max-wall-minutes", type=float, default=0.0,
                    help="stop (and finish the schedule) by this much wall-clock time; 0: 2 x --minutes")
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--intermediate", type=int, default=384)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--chat-frac", type=float, default=0.2)
    ap.add_argument("--eval-every", type=float, default=150.0, help="CPU seconds between evaluations")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)   # a small model's ops are too short to gain from a second thread
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)

    # Data: plain text (the verses in order) and ChatML conversations, both as token ids.
    train_v, val_v = split_verses(args.corpus)
    tok = json.load(open(args.tokenizer))
    specials = {t["content"]: t["id"] for t in tok["added_tokens"]}
    vocab = max(tok["model"]["vocab"].values()) + 1 + len(specials)
    tbytes = token_bytes(args.tokenizer)
    t0 = time.time()
    plain = np.concatenate(encode(args.tokenizer, plain_docs(train_v), args.work))
    val = np.concatenate(encode(args.tokenizer, plain_docs(val_v), args.work))
    chats = encode(args.tokenizer, chat_docs(train_v, rng), args.work)
    chat_starts = np.cumsum([0] + [len(c) for c in chats[:-1]])
    chat_stream = np.concatenate(chats)
    train_chars = sum(len(v) + 1 for v in train_v)
    print("data: %d train tokens (%.2f chars/token), %d validation tokens, %d chat tokens; "
          "encoded in %.1fs" % (len(plain), train_chars / len(plain), len(val), len(chat_stream),
                               time.time() - t0), flush=True)

    config = model_config(args, vocab, specials)
    model = Qwen2(config, dtype=torch.float32)
    model.init_weights(std=0.02, seed=args.seed)
    _, nparams = param_table(model)
    print("model: %s parameters" % format(nparams, ","), flush=True)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)

    log_path = os.path.join(args.out, "train_log.csv")
    with open(log_path, "w") as f:
        f.write("minutes,wall_minutes,step,tokens,lr,train_loss,train_bpc,val_loss,val_bpc\n")
    budget = args.minutes * 60.0
    wall_budget = (args.max_wall_minutes or 2 * args.minutes) * 60.0
    clock = time.process_time          # CPU seconds of this process (see the docstring)
    start, wall_start = clock(), time.time()
    last_eval = start
    step, tokens, recent = 0, 0, []
    interval_loss, interval_n = 0.0, 0
    bytes_per_tok = train_chars / len(plain)

    def checkpoint(final):
        vl, vb = evaluate(model, val, tbytes, args.ctx)
        tl = interval_loss / max(interval_n, 1)
        minutes = (clock() - start) / 60
        with open(log_path, "a") as f:
            f.write("%.3f,%.3f,%d,%d,%.6g,%.5f,%.5f,%.5f,%.5f\n" % (
                minutes, (time.time() - wall_start) / 60, step, tokens, opt.param_groups[0]["lr"], tl,
                tl / math.log(2) / bytes_per_tok, vl, vb))
        print("%6.1f cpu-min  step %6d  tokens %9d  lr %.2e  train %.4f  val %.4f nats = %.4f bits/char  %.0f tok/s"
              % (minutes, step, tokens, opt.param_groups[0]["lr"], tl, vl, vb,
                 tokens / max(clock() - start, 1e-9)), flush=True)
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                    "tokens": tokens, "config": config}, os.path.join(args.work, "ckpt.pt"))
        export(model, config, specials, args, args.tokenizer)
        plot_loss.plot(plot_loss.read_log(log_path), os.path.join(args.out, "loss.svg"))
        return vl, vb

    model.train()
    while True:
        frac = max((clock() - start) / budget, (time.time() - wall_start) / wall_budget)
        if frac >= 1.0:
            break
        lr = lr_at(step, frac, args.lr, args.warmup, args.min_lr_ratio)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch(plain, chat_stream, chat_starts, args.batch, args.ctx, args.chat_frac, rng)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += x.numel()
        interval_loss += loss.item()
        interval_n += 1
        recent = (recent + [loss.item()])[-100:]
        if clock() - last_eval >= args.eval_every:
            checkpoint(False)
            interval_loss, interval_n = 0.0, 0
            last_eval = clock()

    train_minutes = (clock() - start) / 60
    wall_minutes = (time.time() - wall_start) / 60
    vl, vb = checkpoint(True)
    # What the exported file holds: the same weights rounded to BF16.
    bf = Qwen2(config, dtype=torch.float32)
    bf.load_state_dict({k: v.to(torch.bfloat16).to(torch.float32) for k, v in model.state_dict().items()})
    _, vb16 = evaluate(bf, val, tbytes, args.ctx)
    print("validation after rounding to BF16: %.4f bits/char" % vb16, flush=True)

    decode = byte_decoder(args.tokenizer)
    prompts = encode(args.tokenizer, ["In the beginning", chat("And God said", "", DEFAULT_SYSTEM)
                                      .rsplit("<|im_end|>", 1)[0]], args.work)
    stop = (specials["<|im_end|>"], specials["<|endoftext|>"])
    samples = []
    for title, ids, temp in (("Plain text, greedy, prompt \"In the beginning\"", prompts[0], 0.0),
                             ("Plain text, temperature 0.8, prompt \"In the beginning\"", prompts[0], 0.8),
                             ("Chat, temperature 0.8, user says \"And God said\"", prompts[1], 0.8)):
        out = sample(bf, ids.tolist(), 64, temp, 40, args.seed, stop)
        text = (decode(ids.tolist()) if "Plain" in title else "") + decode(out)
        samples.append((title, text))
        print("--- %s\n%s" % (title, text), flush=True)

    stats = {"corpus_sha256": sha256(args.corpus), "verses": len(train_v) + len(val_v),
             "corpus_bytes": os.path.getsize(args.corpus), "val_verses": len(val_v),
             "vocab": vocab, "chars_per_token": bytes_per_tok,
             "minutes": train_minutes, "wall_minutes": wall_minutes, "steps": step, "tokens": tokens,
             "train_loss": sum(recent) / max(len(recent), 1), "val_loss": vl, "val_bpc": vb,
             "val_bpc_bf16": vb16,
             "model_bytes": os.path.getsize(os.path.join(args.out, "model.safetensors")),
             "model_sha256": sha256(os.path.join(args.out, "model.safetensors"))}
    write_training_md(args, model, stats, samples)
    print("exported %s: %s parameters, %.4f bits/char (BF16)" % (args.out, format(nparams, ","), vb16))


if __name__ == "__main__":
    main()
