#!/usr/bin/env python3
"""Random-weight bf16 checkpoints with the exact shapes of real models, for speed runs on the H200
(speed does not depend on the weight values; correctness runs use tests/fixtures). Written as a
transformers-style directory (config.json + model.safetensors) that `tensorfold` and the benches
load like any checkpoint.

Usage: python3 tools/make_random_checkpoint.py --shape llama31-8b --out /tmp/llama31-8b
       [--layers N]   (fewer layers than the model has: same per-layer shapes, a smaller file)
"""
import argparse
import json
import os

import torch
from safetensors.torch import save_file

SHAPES = {
    "llama31-8b": dict(
        architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=4096,
        intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, head_dim=128, vocab_size=128256, max_position_embeddings=131072,
        rms_norm_eps=1e-5, tie_word_embeddings=False, bos_token_id=128000, eos_token_id=128001,
        rope_parameters=dict(rope_type="llama3", rope_theta=500000.0, factor=8.0,
                             low_freq_factor=1.0, high_freq_factor=4.0,
                             original_max_position_embeddings=8192)),
    "qwen3-8b": dict(
        architectures=["Qwen3ForCausalLM"], model_type="qwen3", hidden_size=4096,
        intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
        num_key_value_heads=8, head_dim=128, vocab_size=151936, max_position_embeddings=40960,
        rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=151643, eos_token_id=151645,
        rope_parameters=dict(rope_type="default", rope_theta=1000000.0)),
    "qwen3-30b-a3b": dict(
        architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe", hidden_size=2048,
        intermediate_size=6144, num_hidden_layers=48, num_attention_heads=32,
        num_key_value_heads=4, head_dim=128, vocab_size=151936, max_position_embeddings=40960,
        rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=151643, eos_token_id=151645,
        num_experts=128, num_experts_per_tok=8, moe_intermediate_size=768, norm_topk_prob=True,
        decoder_sparse_step=1, mlp_only_layers=[],
        rope_parameters=dict(rope_type="default", rope_theta=1000000.0)),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=0)
    args = ap.parse_args()
    cfg = dict(SHAPES[args.shape], torch_dtype="bfloat16", hidden_act="silu")
    if args.layers > 0:
        cfg["num_hidden_layers"] = args.layers
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    h, f_, hd = cfg["hidden_size"], cfg["intermediate_size"], cfg["head_dim"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    gen = torch.Generator(device="cuda").manual_seed(0)
    dev = "cuda" if torch.cuda.is_available() else "cpu"

    def rand(*shape, std=0.02):
        return (torch.randn(*shape, generator=gen, device=dev) * std).to(torch.bfloat16).cpu()

    t = {"model.embed_tokens.weight": rand(cfg["vocab_size"], h),
         "lm_head.weight": rand(cfg["vocab_size"], h),
         "model.norm.weight": torch.ones(h, dtype=torch.bfloat16)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = torch.ones(h, dtype=torch.bfloat16)
        t[p + "post_attention_layernorm.weight"] = torch.ones(h, dtype=torch.bfloat16)
        t[p + "self_attn.q_proj.weight"] = rand(q, h)
        t[p + "self_attn.k_proj.weight"] = rand(kv, h)
        t[p + "self_attn.v_proj.weight"] = rand(kv, h)
        t[p + "self_attn.o_proj.weight"] = rand(h, q)
        if cfg["model_type"] in ("qwen3", "qwen3_moe"):
            t[p + "self_attn.q_norm.weight"] = torch.ones(hd, dtype=torch.bfloat16)
            t[p + "self_attn.k_norm.weight"] = torch.ones(hd, dtype=torch.bfloat16)
        if cfg["model_type"] == "qwen3_moe":
            fe = cfg["moe_intermediate_size"]
            t[p + "mlp.gate.weight"] = rand(cfg["num_experts"], h)
            for e in range(cfg["num_experts"]):
                t[p + f"mlp.experts.{e}.gate_proj.weight"] = rand(fe, h)
                t[p + f"mlp.experts.{e}.up_proj.weight"] = rand(fe, h)
                t[p + f"mlp.experts.{e}.down_proj.weight"] = rand(h, fe)
            continue
        t[p + "mlp.gate_proj.weight"] = rand(f_, h)
        t[p + "mlp.up_proj.weight"] = rand(f_, h)
        t[p + "mlp.down_proj.weight"] = rand(h, f_)
    save_file(t, os.path.join(args.out, "model.safetensors"), metadata={"format": "pt"})
    total = sum(v.numel() * v.element_size() for v in t.values())
    print(f"{args.out}: {len(t)} tensors, {total / 1e9:.2f} GB")


if __name__ == "__main__":
    main()
