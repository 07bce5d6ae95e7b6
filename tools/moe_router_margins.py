#!/usr/bin/env python3
"""Routing margins of an MoE fixture in transformers f32 (second-best minus third-best expert
probability per row and MoE layer, for top-2 routers), and the rows where transformers in bf16
routes differently: where a bf16 run may legitimately leave the f32 logits (docs/benchmarks.md).
Run on the H200 machine from the repo root: python3 tools/moe_router_margins.py [fixture]"""
import json
import sys

import numpy as np
import torch
from transformers import AutoModelForCausalLM

name = sys.argv[1] if len(sys.argv) > 1 else "qwen3_moe"
d = f"tests/fixtures/models/{name}"
ref = json.load(open(f"{d}/reference.json"))
cfg = json.load(open(f"{d}/config.json"))
n_experts, top_k = cfg["num_local_experts" if "num_local_experts" in cfg else "num_experts"], \
    cfg["num_experts_per_tok"]


def routing_probs(dtype):
    """{(prompt, layer): [rows, n_experts] router softmax}."""
    model = AutoModelForCausalLM.from_pretrained(d, dtype=dtype).cuda().eval()
    out = {}
    for pi, p in enumerate(ref["prompts"]):
        hooks = []
        for li, layer in enumerate(model.model.layers):
            gate = getattr(layer.mlp, "gate", None)
            if gate is None:
                continue

            def hook(mod, inp, o, li=li, pi=pi):
                t = o[0] if isinstance(o, tuple) else o
                out[(pi, li)] = t.float().reshape(-1, n_experts).softmax(-1).cpu().numpy()
            hooks.append(gate.register_forward_hook(hook))
        with torch.no_grad():
            model(torch.tensor([p["tokens"]], device="cuda"))
        for h in hooks:
            h.remove()
    return out


f32, b16 = routing_probs(torch.float32), routing_probs(torch.bfloat16)
for key in sorted(f32):
    pr, pb = f32[key], b16[key]
    srt = np.sort(pr, -1)[:, ::-1]
    margin = srt[:, top_k - 1] - srt[:, top_k]
    chosen = np.sort(np.argsort(-pr, -1)[:, :top_k], -1)
    chosen16 = np.sort(np.argsort(-pb, -1)[:, :top_k], -1)
    flips = np.where((chosen != chosen16).any(-1))[0]
    smallest = np.argsort(margin)[:4]
    print(f"prompt of {len(ref['prompts'][key[0]]['tokens'])}, layer {key[1]}: smallest margins "
          f"{[(int(i), round(float(margin[i]), 4)) for i in smallest]}, bf16 routes differently "
          f"at {flips.tolist()}")
