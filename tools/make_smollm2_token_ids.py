#!/usr/bin/env python3
# Makes tests/fixtures/tokenizer/smollm2_ids.json: token ids that Python `transformers` gives for
# ~2,400 seeded, varied strings with SmolLM2-135M-Instruct's GGUF tokenizer (tokenizer conformance).
"""Usage: tools/make_smollm2_token_ids.py [MODEL_DIR] [OUT_JSON]

MODEL_DIR defaults to ${TENSORFOLD_HOME:-~/.cache/tensorfold}/models (scripts/setup fetches the
GGUF there). The strings are generated from a fixed seed, so re-running gives the same file.
"""
import json
import os
import random
import sys
import types

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def install_torch_stub():
    # transformers' GGUF reader (integrations/ggml.py, modeling_gguf_pytorch_utils.py) imports torch
    # at module level only to name dtypes; tokenizer conversion never touches tensors. Without torch
    # installed, a stub module with the dtype attributes lets the import succeed. Call this only
    # after `import transformers`, so that transformers' own is_torch_available() (cached) still
    # says False and it does not try to use the stub as a real torch.
    try:
        import torch  # noqa: F401
        return
    except ImportError:
        pass
    torch = types.ModuleType("torch")
    for name in ["float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64",
                 "uint8", "bool", "Tensor", "dtype", "device", "Size", "nn"]:
        setattr(torch, name, type(name, (), {}) if name[0].isupper() else name)
    torch.__version__ = "0.0.0-stub"
    sys.modules["torch"] = torch
    # load_gguf_checkpoint() also refuses to run unless is_torch_available(); the tokenizer path
    # needs no tensor, so tell that one module torch is there (the stub above).
    import transformers.modeling_gguf_pytorch_utils as gguf_utils
    gguf_utils.is_torch_available = lambda: True


ENGLISH = ("Once upon a time there was a little girl named Lily who loved to play outside . The "
           "quick brown fox jumps over the lazy dog while the capital of France is Paris and "
           "engineers measure latency in milliseconds because throughput matters").split()
CODE = [
    "def f(x):\n    return x * 2\n", "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "#include <stdio.h>\nint main() { printf(\"hi\\n\"); }", "const x = await fetch(`/api/${id}`);",
    "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;", "if x != None and y <= 3:",
    "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }", "<div class=\"a\">&nbsp;</div>",
    "    \tindented\ttabs\t\t", "λx.x + 1 // lambda", "arr[::2] = [i**2 for i in range(10)]",
    "git commit -m 'fix: don't crash'", "{\"key\": [1, 2.5e-3, null, true]}",
]
SCRIPTS = [
    "你好，世界！今天天气很好。", "日本語のテキストです。カタカナとひらがな。", "한국어 문장입니다.",
    "مرحبا بالعالم، كيف حالك؟", "Привет, мир! Как дела?", "नमस्ते दुनिया, आप कैसे हैं?",
    "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่าง", "Γειά σου Κόσμε", "שלום עולם", "Xin chào thế giới",
    "Ελληνικά και ẞ ß Straße", "ქართული ენა", "Հայերեն", "ᚠᛇᚻ᛫ᛒᛦᚦ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙",
    "e\u0301 combining é", "Ｆｕｌｌｗｉｄｔｈ　ｓｐａｃｅ", "tiếng Việt có dấu",
]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🇫🇷", "🤖", "✨", "🧑🏿‍💻", "1️⃣", "🫠", "☕"]
SPECIAL = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<repo_name>", "<file_sep>",
           "<filename>", "<gh_stars>", "<issue_start>", "<jupyter_code>"]
LOOKALIKE = ["<|im_start|", "<im_start>", "|im_end|>", "<|IM_END|>", "< |im_end|>", "<|im_end |>",
             "<|endoftext", "<|", "|>", "<<|im_end|>>", "<|unknown|>"]
PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~…—–«»¿¡“”‘’"
WS = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\u00a0", "\u3000", "\u2009", "\v", "\f"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "’s", "n't"]


def rand_word(rng):
    kind = rng.random()
    if kind < 0.45:
        w = rng.choice(ENGLISH)
        return w.capitalize() if rng.random() < 0.2 else (w.upper() if rng.random() < 0.05 else w)
    if kind < 0.55:
        return str(rng.randrange(10 ** rng.randint(1, 14)))
    if kind < 0.65:
        s = rng.choice(SCRIPTS)
        a = rng.randrange(len(s))
        return s[a:a + rng.randint(1, 12)]
    if kind < 0.72:
        return "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 3)))
    if kind < 0.80:
        return "".join(rng.choice(PUNCT) for _ in range(rng.randint(1, 5)))
    if kind < 0.86:
        return rng.choice(ENGLISH) + rng.choice(CONTRACTIONS)
    if kind < 0.90:
        return rng.choice(SPECIAL)
    if kind < 0.93:
        return rng.choice(LOOKALIKE)
    if kind < 0.97:
        c = rng.choice(CODE)
        return c[: rng.randint(1, len(c))]
    return "".join(chr(rng.randint(0x20, 0x2FFF)) for _ in range(rng.randint(1, 4)))


def rand_text(rng):
    parts = []
    for _ in range(rng.randint(1, 14)):
        parts.append(rand_word(rng))
        r = rng.random()
        parts.append(" " if r < 0.7 else ("" if r < 0.8 else rng.choice(WS)))
    text = "".join(parts)
    if rng.random() < 0.3:
        text = text.strip()
    if rng.random() < 0.1:
        text = rng.choice(WS) + text
    return text


def make_texts():
    rng = random.Random(20240611)
    texts = [
        "", " ", "  ", "\n", "\n\n\n", "Hello", " Hello", "Hello world", "Once upon a time",
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
        "Face<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\nHello! How can "
        "I help?<|im_end|>\n", "1234567890123456789", "3.14159 2,000,000 1e-9",
        "I'm sure you're right, it's what they've said we'd do and I'll go.", "a\u200db", "\ufeffbom",
        "<|im_end|><|im_end|>", "text<|im_end|>text", " <|im_start|> ", "\t\t\tx", "x" * 300,
        "  leading and trailing  ", "…" * 20, "🙂" * 10, "      \n      \n",
    ]
    texts += CODE + SCRIPTS + EMOJI + SPECIAL + LOOKALIKE
    texts += [w + c for w in ("it", "they", "WE") for c in CONTRACTIONS]
    while len(texts) < 2400:
        texts.append(rand_text(rng))
    return texts


def main():
    home = os.environ.get("TENSORFOLD_HOME", os.path.expanduser("~/.cache/tensorfold"))
    model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(home, "models")
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "tokenizer",
        "smollm2_ids.json")
    import transformers
    install_torch_stub()
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir, gguf_file=GGUF_NAME)
    texts = make_texts()
    cases = [{"text": t, "ids": tok.encode(t, add_special_tokens=True)} for t in texts]
    # Record what add_special_tokens=True means for this model (BOS or not), so that the C++ test
    # compares against encode(text, add_special=true) under the same convention.
    probe = tok.encode("Hello", add_special_tokens=True)
    plain = tok.encode("Hello", add_special_tokens=False)
    doc = {
        "model": GGUF_NAME,
        "generator": "tools/make_smollm2_token_ids.py",
        "transformers_version": transformers.__version__,
        "tokenizer_class": type(tok).__name__,
        "add_special_tokens": True,
        "adds_bos": probe[:1] == [tok.bos_token_id] and plain[:1] != [tok.bos_token_id],
        "adds_eos": len(probe) > len(plain) and probe[-1] == tok.eos_token_id,
        "bos_token_id": tok.bos_token_id,
        "eos_token_id": tok.eos_token_id,
        "cases": cases,
    }
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(cases)} cases to {out} ({os.path.getsize(out)} bytes); adds_bos="
          f"{doc['adds_bos']} adds_eos={doc['adds_eos']}")


if __name__ == "__main__":
    main()
