#!/usr/bin/python3
"""An F32 GGUF file (e.g. `./run convert Q.gguf D.gguf --type f32`, which
dequantizes exactly) as a Hugging Face folder: config.json + F32
model.safetensors, so the PyTorch reference (tools/qwen2_torch.py) can run the
very weights Lantern dequantized.

    /usr/bin/python3 tools/gguf_to_folder.py FILE.gguf OUT_DIR

Independent of Lantern's C++ reader: the header is parsed here again.
"""
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen2_torch import write_safetensors  # noqa: E402

SIZES = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
LAYER = {"attn_norm.weight": "input_layernorm.weight", "ffn_norm.weight": "post_attention_layernorm.weight",
         "attn_q.weight": "self_attn.q_proj.weight", "attn_q.bias": "self_attn.q_proj.bias",
         "attn_k.weight": "self_attn.k_proj.weight", "attn_k.bias": "self_attn.k_proj.bias",
         "attn_v.weight": "self_attn.v_proj.weight", "attn_v.bias": "self_attn.v_proj.bias",
         "attn_output.weight": "self_attn.o_proj.weight", "ffn_gate.weight": "mlp.gate_proj.weight",
         "ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight"}
GLOBAL = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
          "output.weight": "lm_head.weight"}


def main(path, out):
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n].decode("utf-8", "replace")
        pos += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(SIZES[t])

    assert data[:4] == b"GGUF", path + ": not GGUF"
    pos = 4
    _version, n_tensors, n_kv = take("I"), take("Q"), take("Q")
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        ne = [take("Q") for _ in range(take("I"))]
        infos.append((name, ne, take("I"), take("Q")))
    align = kv.get("general.alignment", 32)
    start = (pos + align - 1) // align * align
    tensors = {}
    for name, ne, t, off in infos:
        assert t == 0, "%s: tensor %s is not F32 (convert with --type f32 first)" % (path, name)
        count = int(np.prod(ne))
        a = np.frombuffer(data, dtype="<f4", count=count, offset=start + off)
        if name in GLOBAL:
            hf = GLOBAL[name]
        else:
            _, layer, rest = name.split(".", 2)
            hf = "model.layers.%s.%s" % (layer, LAYER[rest])
        tensors[hf] = torch.from_numpy(a.reshape(list(reversed(ne))).copy())
    a = "qwen2."
    config = {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
        "hidden_size": kv[a + "embedding_length"], "intermediate_size": kv[a + "feed_forward_length"],
        "num_hidden_layers": kv[a + "block_count"], "num_attention_heads": kv[a + "attention.head_count"],
        "num_key_value_heads": kv[a + "attention.head_count_kv"], "max_position_embeddings": kv[a + "context_length"],
        "rms_norm_eps": kv[a + "attention.layer_norm_rms_epsilon"], "rope_theta": kv[a + "rope.freq_base"],
        "tie_word_embeddings": "lm_head.weight" not in tensors,
        "vocab_size": tensors["model.embed_tokens.weight"].shape[0], "torch_dtype": "float32",
    }
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors, dtype="F32")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: gguf_to_folder.py FILE.gguf OUT_DIR")
    main(sys.argv[1], sys.argv[2])
