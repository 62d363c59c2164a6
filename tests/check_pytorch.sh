#!/usr/bin/env bash
# Lantern's logits equal the PyTorch reference (float64) on every case of
# tools/compare_torch.py: 1, 10 and 300 tokens (far into the RoPE range), two
# model shapes that differ in every dimension (one with n_kv_heads == n_heads),
# BF16 and F32 weights — for both kernel sets.
set -euo pipefail
cd "$(dirname "$0")/.."
/usr/bin/python3 tools/compare_torch.py --kernels fast
/usr/bin/python3 tools/compare_torch.py --kernels plain --quick
