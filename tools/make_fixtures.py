#!/usr/bin/env python3
# Builds the tiny random-weight model fixtures under tests/fixtures/models/ with transformers' own
# model classes, and records float32 reference logits and greedy continuations for the C++ tests.
"""Usage: python3 tools/make_fixtures.py --out tests/fixtures/models [--only NAME ...]

Each fixture directory holds config.json + model.safetensors (what the engine loads) and
reference.json + reference.bin (what transformers computed). reference.bin is raw little-endian
float32; reference.json gives, per prompt, its token ids, the offset (in floats) and shape of its
full-prompt logits, the 16 greedy token ids and the logits each greedy token was picked from.

References are computed on the CPU in float32 with attn_implementation="eager" and no KV cache
(every greedy step recomputes the whole sequence), so they are the plainest reading of the model.
A "_bf16" fixture stores bf16 weights; its reference is float32 compute over those same
bf16-rounded weights (what the engine does: bf16 weights, f32 activations), and the json also
records how far that is from the float32 model's logits.
"""
import argparse
import json
import math
import os
import shutil
import sys
import traceback

import numpy as np

VOCAB = 512
PROMPT_LENS = (5, 19, 41)  # 41 > every sliding window used below
GREEDY_STEPS = 16
WEIGHT_STD = 0.15  # wide enough that greedy argmax margins are far above f32 noise
MIN_MARGIN = 2e-3


def base_dims(**kw):
    d = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
             rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2, pad_token_id=0,
             tie_word_embeddings=False)
    d.update(kw)
    return d


def rope(kind, theta=10000.0, **kw):
    p = {"rope_type": kind, "rope_theta": theta}
    p.update(kw)
    return p


# name -> (config class, model class, config kwargs, bf16 copy?, norm offset style)
def families(T):
    return {
        "llama": (T.LlamaConfig, T.LlamaForCausalLM, base_dims(), True, False),
        # 32-wide heads: one head a rank at 4 tensor-parallel ranks is a whole matmul chunk of o.
        "llama_wide": (T.LlamaConfig, T.LlamaForCausalLM, base_dims(head_dim=32), False, False),
        "llama31": (T.LlamaConfig, T.LlamaForCausalLM,
                    base_dims(tie_word_embeddings=True,
                              rope_parameters=rope("llama3", 500000.0, factor=8.0,
                                                   low_freq_factor=1.0, high_freq_factor=4.0,
                                                   original_max_position_embeddings=32)),
                    False, False),
        "llama_linear": (T.LlamaConfig, T.LlamaForCausalLM,
                         base_dims(rope_parameters=rope("linear", factor=2.0)), False, False),
        "llama_yarn": (T.LlamaConfig, T.LlamaForCausalLM,
                       base_dims(rope_parameters=rope("yarn", factor=4.0,
                                                      original_max_position_embeddings=32)),
                       False, False),
        "mistral": (T.MistralConfig, T.MistralForCausalLM,
                    base_dims(num_hidden_layers=3, sliding_window=16, head_dim=16), False, False),
        "qwen2": (T.Qwen2Config, T.Qwen2ForCausalLM, base_dims(tie_word_embeddings=True), False,
                  False),
        "qwen3": (T.Qwen3Config, T.Qwen3ForCausalLM,
                  base_dims(head_dim=32, tie_word_embeddings=True), True, False),
        "qwen3_moe": (T.Qwen3MoeConfig, T.Qwen3MoeForCausalLM,
                      base_dims(num_hidden_layers=3, head_dim=32, num_experts=8,
                                num_local_experts=8, num_experts_per_tok=2,
                                moe_intermediate_size=32, norm_topk_prob=True, mlp_only_layers=[1],
                                decoder_sparse_step=1),
                      False, False),
        "gemma3": (T.Gemma3TextConfig, T.Gemma3ForCausalLM,
                   base_dims(num_hidden_layers=4, head_dim=16, sliding_window=8,
                             sliding_window_pattern=2, query_pre_attn_scalar=24,
                             final_logit_softcapping=30.0, attn_logit_softcapping=50.0,
                             hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
                             layer_types=["sliding_attention", "full_attention",
                                          "sliding_attention", "full_attention"],
                             rope_parameters={"sliding_attention": rope("default", 10000.0),
                                              "full_attention": rope("default", 1000000.0)}),
                   False, True),
        "phi3": (T.Phi3Config, T.Phi3ForCausalLM, base_dims(eos_token_id=2, pad_token_id=0),
                 False, False),
    }


def prompts_for(seed):
    rng = np.random.RandomState(seed)
    return [[1] + [int(t) for t in rng.randint(3, VOCAB, size=n - 1)] for n in PROMPT_LENS]


def randomize(torch, model, gemma_norms, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if p.dim() >= 2:
                p.copy_(noise * WEIGHT_STD)
            elif "norm" in name:
                # Perturbed so the norm weights are exercised; Gemma stores w in (1 + w).
                p.copy_(noise * 0.1 + (0.0 if gemma_norms else 1.0))
            else:  # biases
                p.copy_(noise * 0.1)


def reference(torch, model, prompts):
    """Full-prompt logits and GREEDY_STEPS greedy tokens (with the logits each was picked from)."""
    out = []
    with torch.no_grad():
        for toks in prompts:
            ids = torch.tensor([toks], dtype=torch.long)
            full = model(input_ids=ids, use_cache=False).logits[0].float().numpy().copy()
            seq = list(toks)
            greedy, step_logits, margins = [], [], []
            last = full[-1]
            for _ in range(GREEDY_STEPS):
                order = np.argsort(-last, kind="stable")
                margins.append(float(last[order[0]] - last[order[1]]))
                nxt = int(order[0])
                greedy.append(nxt)
                step_logits.append(last.copy())
                seq.append(nxt)
                ids = torch.tensor([seq], dtype=torch.long)
                last = model(input_ids=ids, use_cache=False).logits[0, -1].float().numpy().copy()
            out.append(dict(tokens=toks, logits=full, greedy=greedy,
                            greedy_logits=np.stack(step_logits), margin=min(margins)))
    return out


def write_reference(path, refs, meta):
    blob, index = [], []
    offset = 0
    for r in refs:
        entry = {"tokens": r["tokens"], "greedy": r["greedy"], "min_greedy_margin": r["margin"]}
        for key in ("logits", "greedy_logits"):
            a = np.ascontiguousarray(r[key], dtype="<f4")
            entry[key] = {"offset": offset, "shape": list(a.shape)}
            offset += a.size
            blob.append(a.reshape(-1))
        index.append(entry)
    np.concatenate(blob).astype("<f4").tofile(os.path.join(path, "reference.bin"))
    meta = dict(meta, prompts=index, bin="reference.bin", bin_floats=offset)
    with open(os.path.join(path, "reference.json"), "w") as f:
        json.dump(meta, f, indent=1)


def save_model(model, path):
    os.makedirs(path, exist_ok=True)
    model.save_pretrained(path)
    for f in os.listdir(path):
        if f not in ("config.json", "model.safetensors"):
            p = os.path.join(path, f)
            shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)


def build(torch, T, name, spec, out_root):
    cfg_cls, model_cls, kw, want_bf16, gemma_norms = spec
    cfg = cfg_cls(**kw)
    cfg._attn_implementation = "eager"
    seed_base = sum(map(ord, name))
    for attempt in range(4):
        seed = seed_base * 10 + attempt
        torch.manual_seed(seed)
        model = model_cls(cfg).float().eval()
        try:
            model.set_attn_implementation("eager")
        except Exception:
            pass
        randomize(torch, model, gemma_norms, seed)
        prompts = prompts_for(seed)
        refs = reference(torch, model, prompts)
        margin = min(r["margin"] for r in refs)
        if margin >= MIN_MARGIN:
            break
    meta = dict(name=name, model_class=model_cls.__name__, dtype="float32", seed=seed,
                transformers=T.__version__, torch=torch.__version__,
                attn_implementation=model.config._attn_implementation,
                reference="CPU float32, eager attention, no KV cache",
                min_greedy_margin=margin)
    path = os.path.join(out_root, name)
    save_model(model, path)
    from safetensors import safe_open
    with safe_open(os.path.join(path, "model.safetensors"), "np") as f:
        meta["tensors"] = {k: list(f.get_slice(k).get_shape()) for k in f.keys()}
    write_reference(path, refs, meta)
    summary = [f"{name}: seed {seed}, margin {margin:.4f}, {len(meta['tensors'])} tensors"]

    if want_bf16:
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.to(torch.bfloat16).float())
        refs16 = reference(torch, model, prompts)
        drift = max(float(np.abs(a["logits"] - b["logits"]).max()) for a, b in zip(refs, refs16))
        path16 = path + "_bf16"
        save_model(model.to(torch.bfloat16), path16)
        meta16 = dict(meta, name=name + "_bf16", dtype="bfloat16",
                      reference="CPU float32 compute over the bf16-rounded weights, eager, no cache",
                      max_abs_vs_float32_model=drift,
                      min_greedy_margin=min(r["margin"] for r in refs16))
        write_reference(path16, refs16, meta16)
        summary.append(f"{name}_bf16: drift vs f32 model {drift:.4f}, margin "
                       f"{meta16['min_greedy_margin']:.4f}")
    return summary


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    import torch
    import transformers as T
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    torch.set_default_dtype(torch.float32)
    print(f"torch {torch.__version__}, transformers {T.__version__}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    ok, failed = [], []
    for name, spec in families(T).items():
        if args.only and name not in args.only:
            continue
        try:
            for line in build(torch, T, name, spec, args.out):
                print("OK  " + line, flush=True)
            ok.append(name)
        except Exception:
            traceback.print_exc()
            print(f"FAIL {name}", flush=True)
            failed.append(name)
    print(f"summary: {len(ok)} ok {ok}; {len(failed)} failed {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
