#!/usr/bin/env python3
"""How far transformers itself lands from the f32 fixture logits when it runs in bf16: the yardstick
for the CUDA backend's tolerance (docs/benchmarks.md). Run on the H200 machine from the repo root:
python3 tools/bf16_reference_error.py [fixture ...]"""
import json
import sys

import numpy as np
import torch
from transformers import AutoModelForCausalLM

names = sys.argv[1:] or ["llama", "llama31", "llama_linear", "llama_yarn", "mistral", "qwen2",
                         "qwen3", "phi3", "llama_bf16", "qwen3_bf16", "gemma3", "qwen3_moe"]
for name in names:
    d = f"tests/fixtures/models/{name}"
    ref = json.load(open(f"{d}/reference.json"))
    data = np.fromfile(f"{d}/{ref['bin']}", dtype=np.float32)
    model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16).cuda().eval()
    worst, over, rows = 0.0, 0, 0
    for p in ref["prompts"]:
        ids = torch.tensor([p["tokens"]], device="cuda")
        with torch.no_grad():
            got = model(ids).logits[0].float().cpu().numpy()
        off, shape = p["logits"]["offset"], p["logits"]["shape"]
        want = data[off:off + shape[0] * shape[1]].reshape(shape)
        err = np.abs(got - want).max(axis=1)
        worst = max(worst, float(err.max()))
        over += int((err > 0.25).sum())
        rows += len(err)
    print(f"[ torch bf16 ] {name:13s} max-abs prompt {worst:.3g}, positions past 0.25: {over}/{rows}")
