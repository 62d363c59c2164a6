#!/usr/bin/python3
"""A small, readable PyTorch implementation of the Qwen2 architecture (and Qwen3 dense).

Lantern uses this one module twice:
  * as the *reference* the C++ engine is compared against (tests/, float64 ground truth), and
  * as the model that tools/train.py trains for the default model in trained/.
Keeping one copy means the trained weights and the engine share exactly one definition of the math.

It runs on Debian's python3-torch (1.13) under /usr/bin/python3 and needs nothing else
(numpy only for turning raw bytes into tensors). No `transformers` is needed.

Parameter names equal Hugging Face's Qwen2ForCausalLM, so `state_dict()` keys are the
safetensors tensor names (model.embed_tokens.weight, model.layers.0.self_attn.q_proj.bias, ...).
A config.json with "model_type": "qwen3" gives Qwen3ForCausalLM instead: no q/k/v biases
(attention_bias false), an RMSNorm over each head of q and k before RoPE (self_attn.q_norm,
self_attn.k_norm, [head_dim] each), and head_dim read from the config.

Cross-checking against Hugging Face, where `transformers` is installed (not needed by Lantern):
    from transformers import Qwen2ForCausalLM
    hf = Qwen2ForCausalLM.from_pretrained(MODEL_DIR, torch_dtype=torch.float64).eval()
    mine, _ = load_folder(MODEL_DIR, torch.float64)
    ids = torch.tensor([[1, 2, 3]])
    pos = torch.arange(P, P + 3)[None]                 # for start_pos = P
    ref = hf(ids, position_ids=pos).logits
    print((ref - mine(ids, start_pos=P)).abs().max())  # ~1e-12 in float64

CLI:
    /usr/bin/python3 tools/qwen2_torch.py MODEL_DIR --tokens 1,2,3 [--start-pos P] [--out FILE]
writes the logits [T, vocab] as raw little-endian float32, row-major, to FILE and prints
the top-5 tokens of the last row.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ----------------------------------------------------------------------------- config

def _cfg(config, key, default=None):
    v = config.get(key, default)
    if v is None:
        raise KeyError("config.json lacks %r" % key)
    return v


def _compute_dtype(dtype):
    """Norms and softmax of low-precision models are computed in float32, as Hugging Face does;
    float32 and float64 models compute in their own dtype (float64 stays a ground truth)."""
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32


# ----------------------------------------------------------------------------- layers

class RMSNorm(nn.Module):
    """y = x * rsqrt(mean(x^2) + eps) * w"""

    def __init__(self, dim, eps, **kw):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim, **kw))
        self.eps = eps

    def forward(self, x):
        in_dtype = x.dtype
        h = x.to(_compute_dtype(in_dtype))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(in_dtype)


def rope_cos_sin(positions, head_dim, theta, dtype):
    """cos and sin tables [T, head_dim] in the "rotate_half" layout: the head_dim/2 angles
    pos * inv_freq are concatenated twice, so dimension i pairs with i + head_dim/2."""
    work = torch.float64 if dtype == torch.float64 else torch.float32
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=work) / head_dim))
    angles = positions.to(work)[:, None] * inv_freq[None, :]          # [T, hd/2]
    emb = torch.cat([angles, angles], dim=-1)                           # [T, hd]
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin):
    """x: [B, heads, T, hd]; cos/sin: [T, hd]."""
    return x * cos + rotate_half(x) * sin


class Attention(nn.Module):
    def __init__(self, config, **kw):
        super().__init__()
        d = _cfg(config, "hidden_size")
        self.n_heads = _cfg(config, "num_attention_heads")
        self.n_kv = config.get("num_key_value_heads") or self.n_heads
        self.head_dim = config.get("head_dim") or d // self.n_heads
        self.theta = float(config.get("rope_theta", 10000.0))
        assert self.n_heads % self.n_kv == 0, "query heads must be a multiple of KV heads"
        qwen3 = config.get("model_type") == "qwen3"
        bias = bool(config.get("attention_bias", not qwen3))   # Qwen2: always biased; Qwen3: none
        self.q_proj = nn.Linear(d, self.n_heads * self.head_dim, bias=bias, **kw)
        self.k_proj = nn.Linear(d, self.n_kv * self.head_dim, bias=bias, **kw)
        self.v_proj = nn.Linear(d, self.n_kv * self.head_dim, bias=bias, **kw)
        self.o_proj = nn.Linear(self.n_heads * self.head_dim, d, bias=False, **kw)
        if qwen3:   # QK-norm: one RMSNorm over head_dim, shared by all heads of q (of k)
            eps = float(config.get("rms_norm_eps", 1e-6))
            self.q_norm = RMSNorm(self.head_dim, eps, **kw)
            self.k_norm = RMSNorm(self.head_dim, eps, **kw)
        self.qk_norm = qwen3

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        hd = self.head_dim
        q = self.q_proj(x).view(B, T, self.n_heads, hd)
        k = self.k_proj(x).view(B, T, self.n_kv, hd)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q = q.transpose(1, 2)                                               # [B, H, T, hd]
        k = k.transpose(1, 2)                                               # [B, KV, T, hd]
        v = self.v_proj(x).view(B, T, self.n_kv, hd).transpose(1, 2)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        # Grouped-query attention: KV head j serves query heads j*rep .. j*rep+rep-1.
        rep = self.n_heads // self.n_kv
        if rep > 1:
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(hd)                 # [B, H, T, T]
        scores = scores.masked_fill(mask, float("-inf"))
        probs = F.softmax(scores.to(_compute_dtype(scores.dtype)), dim=-1).to(q.dtype)
        out = (probs @ v).transpose(1, 2).reshape(B, T, self.n_heads * hd)
        return self.o_proj(out)


class MLP(nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x))"""

    def __init__(self, config, **kw):
        super().__init__()
        d, f = _cfg(config, "hidden_size"), _cfg(config, "intermediate_size")
        self.gate_proj = nn.Linear(d, f, bias=False, **kw)
        self.up_proj = nn.Linear(d, f, bias=False, **kw)
        self.down_proj = nn.Linear(f, d, bias=False, **kw)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, config, **kw):
        super().__init__()
        d, eps = _cfg(config, "hidden_size"), float(config.get("rms_norm_eps", 1e-6))
        self.input_layernorm = RMSNorm(d, eps, **kw)
        self.self_attn = Attention(config, **kw)
        self.post_attention_layernorm = RMSNorm(d, eps, **kw)
        self.mlp = MLP(config, **kw)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x


class _Backbone(nn.Module):
    """Holds the parameters under the "model." prefix, as Hugging Face names them."""

    def __init__(self, config, **kw):
        super().__init__()
        d = _cfg(config, "hidden_size")
        self.embed_tokens = nn.Embedding(_cfg(config, "vocab_size"), d, **kw)
        self.layers = nn.ModuleList(DecoderLayer(config, **kw)
                                    for _ in range(_cfg(config, "num_hidden_layers")))
        self.norm = RMSNorm(d, float(config.get("rms_norm_eps", 1e-6)), **kw)


class Qwen2(nn.Module):
    """Qwen2ForCausalLM without a KV cache: forward(ids[B,T], start_pos) -> logits[B,T,vocab]."""

    def __init__(self, config, device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.config = dict(config)
        self.tied = bool(config.get("tie_word_embeddings", False))
        self.model = _Backbone(config, **kw)
        if not self.tied:
            self.lm_head = nn.Linear(_cfg(config, "hidden_size"), _cfg(config, "vocab_size"),
                                     bias=False, **kw)

    def init_weights(self, std=0.02, seed=None):
        """Hugging Face's initialisation: normal(0, std) matrices, zero biases, unit norms."""
        g = torch.Generator().manual_seed(seed) if seed is not None else None
        for name, p in self.named_parameters():
            with torch.no_grad():
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                elif name.endswith(".bias"):
                    p.zero_()
                else:
                    p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float32) * std)

    def output_weight(self):
        return self.model.embed_tokens.weight if self.tied else self.lm_head.weight

    def hidden(self, input_ids, start_pos=0):
        """Final-normed hidden states [B, T, hidden]."""
        B, T = input_ids.shape
        x = self.model.embed_tokens(input_ids)
        attn = self.model.layers[0].self_attn if len(self.model.layers) else None
        if attn is not None:
            pos = torch.arange(start_pos, start_pos + T)
            cos, sin = rope_cos_sin(pos, attn.head_dim, attn.theta, x.dtype)
            # True above the diagonal: position t may not look at positions > t.
            mask = torch.ones(T, T, dtype=torch.bool).triu(1)
            for layer in self.model.layers:
                x = layer(x, cos, sin, mask)
        return self.model.norm(x)

    def forward(self, input_ids, start_pos=0):
        return self.hidden(input_ids, start_pos) @ self.output_weight().t()

    def num_params(self):
        return sum(p.numel() for p in self.parameters())


# ----------------------------------------------------------------------------- safetensors

_ST_DTYPES = {"F64": (np.float64, torch.float64), "F32": (np.float32, torch.float32),
              "F16": (np.float16, torch.float16), "I64": (np.int64, torch.int64),
              "I32": (np.int32, torch.int32), "I16": (np.int16, torch.int16),
              "U8": (np.uint8, torch.uint8), "I8": (np.int8, torch.int8)}


def read_safetensors(path):
    """Parses a .safetensors file by hand: an 8-byte little-endian header length N, N bytes of
    JSON {name: {dtype, shape, data_offsets: [begin, end]}} (offsets relative to the data that
    follows the header), then the data. BF16 tensors come back as torch.bfloat16."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = memoryview(raw)[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        shape = info["shape"]
        buf = data[b:e]
        dt = info["dtype"]
        if dt == "BF16":
            # A bfloat16 is the top 16 bits of a float32: widen and shift, exactly.
            u16 = np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16
            t = torch.from_numpy(u16.view(np.float32).copy()).to(torch.bfloat16)
        elif dt in _ST_DTYPES:
            npdt = np.dtype(_ST_DTYPES[dt][0]).newbyteorder("<")
            t = torch.from_numpy(np.frombuffer(buf, dtype=npdt).astype(npdt.newbyteorder("=")))
        else:
            raise ValueError("%s: unsupported dtype %s for %s" % (path, dt, name))
        out[name] = t.reshape(shape)
    return out


def read_safetensors_metadata(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n).decode("utf-8")).get("__metadata__", {})


def write_safetensors(path, tensors, metadata=None, dtype="BF16"):
    """Writes {name: tensor} as BF16 (default) or F32, names sorted, the JSON header padded
    with spaces to a multiple of 8 bytes so the data section starts aligned."""
    if dtype not in ("BF16", "F32"):
        raise ValueError("write_safetensors: dtype must be BF16 or F32")
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        if dtype == "BF16":
            # Round to nearest even (torch's float->bfloat16 conversion), then keep the bits.
            b = t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
        else:
            b = t.to(torch.float32).numpy().astype("<f4").tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


# ----------------------------------------------------------------------------- folders

def load_folder(path, dtype=torch.float64):
    """Reads a Hugging Face model folder (config.json + model.safetensors, or shards listed in
    model.safetensors.index.json) into a Qwen2 of the given dtype. Returns (model, config)."""
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    single = os.path.join(path, "model.safetensors")
    if os.path.exists(single):
        tensors = read_safetensors(single)
    else:
        with open(os.path.join(path, "model.safetensors.index.json")) as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        tensors = {}
        for s in shards:
            tensors.update(read_safetensors(os.path.join(path, s)))
    # Build without allocating random weights, then fill from the file.
    model = Qwen2(config, device="meta", dtype=dtype).to_empty(device="cpu")
    if model.tied:
        tensors.pop("lm_head.weight", None)   # some tied checkpoints store a copy anyway
    state = {k: v.to(dtype) for k, v in tensors.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError("%s: missing tensors %s, unexpected tensors %s"
                         % (path, missing, unexpected))
    model.eval()
    return model, config


# ----------------------------------------------------------------------------- CLI

def main(argv=None):
    ap = argparse.ArgumentParser(description="Qwen2 reference forward pass (PyTorch)")
    ap.add_argument("model_dir")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids")
    ap.add_argument("--start-pos", type=int, default=0)
    ap.add_argument("--out", help="write logits [T, vocab] as raw little-endian float32")
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32", "bfloat16"])
    a = ap.parse_args(argv)
    torch.set_num_threads(int(os.environ.get("LANTERN_TORCH_THREADS", "1")))
    ids = [int(t) for t in a.tokens.split(",") if t.strip()]
    model, config = load_folder(a.model_dir, getattr(torch, a.dtype))
    with torch.no_grad():
        logits = model(torch.tensor([ids], dtype=torch.long), start_pos=a.start_pos)[0]
    if a.out:
        logits.to(torch.float32).numpy().astype("<f4").tofile(a.out)
    last = logits[-1].to(torch.float64)
    top = torch.topk(last, min(5, last.numel()))
    print("top-5 of position %d:" % (a.start_pos + len(ids) - 1))
    for v, i in zip(top.values.tolist(), top.indices.tolist()):
        print("  %6d  %.6f" % (i, v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
