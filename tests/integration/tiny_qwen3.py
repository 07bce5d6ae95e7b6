"""A tiny random-weight Qwen3 checkpoint with the real Qwen3 tokenizer and chat template
(../shared/tokenizers/qwen3, linked, not copied), written with numpy into a temporary directory:
the smallest model that speaks Qwen3's whole vocabulary, think markers and Hermes tool calls."""
import json
import os
import struct
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER = (ROOT / ".." / "shared" / "tokenizers" / "qwen3").resolve()
HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, LAYERS, VOCAB = 64, 4, 2, 32, 128, 2, 151936

CONFIG = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": HIDDEN,
    "intermediate_size": FFN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
    "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM, "hidden_act": "silu",
    "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
    "tie_word_embeddings": True, "vocab_size": VOCAB, "bos_token_id": 151643,
    "eos_token_id": 151645, "torch_dtype": "bfloat16", "attention_bias": False,
}


def shapes():
    out = {"model.embed_tokens.weight": (VOCAB, HIDDEN), "model.norm.weight": (HIDDEN,)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        out.update({
            p + "input_layernorm.weight": (HIDDEN,),
            p + "post_attention_layernorm.weight": (HIDDEN,),
            p + "self_attn.q_proj.weight": (HEADS * HEAD_DIM, HIDDEN),
            p + "self_attn.k_proj.weight": (KV_HEADS * HEAD_DIM, HIDDEN),
            p + "self_attn.v_proj.weight": (KV_HEADS * HEAD_DIM, HIDDEN),
            p + "self_attn.o_proj.weight": (HIDDEN, HEADS * HEAD_DIM),
            p + "self_attn.q_norm.weight": (HEAD_DIM,),
            p + "self_attn.k_norm.weight": (HEAD_DIM,),
            p + "mlp.gate_proj.weight": (FFN, HIDDEN),
            p + "mlp.up_proj.weight": (FFN, HIDDEN),
            p + "mlp.down_proj.weight": (HIDDEN, FFN),
        })
    return out


def bf16(a):
    """Round-to-nearest-even f32 -> bf16 bits."""
    bits = a.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def write_checkpoint(directory: Path, seed=0) -> Path:
    rng = np.random.default_rng(seed)
    header, blobs, offset = {}, [], 0
    for name, shape in shapes().items():
        norm = name.endswith("norm.weight")
        a = np.ones(shape) if norm else rng.normal(0.0, 0.5 if "embed" in name else 0.08, shape)
        data = bf16(a).tobytes()
        header[name] = {"dtype": "BF16", "shape": list(shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for b in blobs:
            f.write(b)
    (directory / "config.json").write_text(json.dumps(CONFIG))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        link = directory / name
        if not link.exists():
            os.symlink(TOKENIZER / name, link)
    return directory
