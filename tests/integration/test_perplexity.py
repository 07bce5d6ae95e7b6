"""`tensorfold perplexity` against an independent computation: llama-perplexity's formula applied in
numpy to the transformers reference logits of the tiny llama fixture (tests/fixtures/models/llama).

The fixture has no tokenizer, so the test gives it one whose vocabulary is one character per id
(BPE without merges, built and checked with the `tokenizers` package): the text then tokenizes to
exactly the reference prompt's ids, and the command scores the very positions the reference has.
"""
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from conftest import ROOT, binary

FIXTURE = ROOT / "tests" / "fixtures" / "models" / "llama"
BOS, EOS, UNK = 1, 2, 0


def char_of(i):
    return chr(0x100 + i)  # one code point per id, none of them whitespace or special


def make_tokenizer(vocab_size):
    vocab = {"<unk>": UNK, "<s>": BOS, "</s>": EOS}
    vocab.update({char_of(i): i for i in range(3, vocab_size)})
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for t, i in vocab.items() if i < 3]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
            "normalizer": None, "pre_tokenizer": None,
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                          {"Sequence": {"id": "A", "type_id": 0}}],
                               "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                        {"Sequence": {"id": "A", "type_id": 0}},
                                        {"Sequence": {"id": "B", "type_id": 1}}],
                               "special_tokens": {"<s>": {"id": "<s>", "ids": [BOS],
                                                          "tokens": ["<s>"]}}},
            "decoder": None,
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": vocab, "merges": []}}


def reference_prompt():
    ref = json.loads((FIXTURE / "reference.json").read_text())
    p = max(ref["prompts"], key=lambda p: len(p["tokens"]))
    n, vocab = p["logits"]["shape"]
    raw = np.fromfile(FIXTURE / "reference.bin", dtype="<f4")
    logits = raw[p["logits"]["offset"]:p["logits"]["offset"] + n * vocab].reshape(n, vocab)
    return p["tokens"], logits


def llama_perplexity(chunks):
    """llama-perplexity's sums over (logits, tokens) chunks: rows n/2 .. n-2 predict the next id."""
    nll, nll2, count, running = 0.0, 0.0, 0, []
    for logits, tokens in chunks:
        n = len(tokens)
        for p in range(n // 2, n - 1):
            row = logits[p].astype(np.float32)
            m = row.max()
            v = -(float(row[tokens[p + 1]] - m) - np.log(np.exp(row - m).astype(np.float64).sum()))
            nll, nll2, count = nll + v, nll2 + v * v, count + 1
        running.append(np.exp(nll / count))
    mean = nll / count
    var = nll2 / count - mean * mean
    ppl = np.exp(mean)
    return running, ppl, np.sqrt(var / (count - 1)) * ppl


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    if not binary().exists():
        pytest.skip(f"{binary()} not built")
    d = tmp_path_factory.mktemp("ppl-model")
    for f in ("config.json", "model.safetensors"):
        shutil.copy(FIXTURE / f, d / f)
    vocab = json.loads((FIXTURE / "config.json").read_text())["vocab_size"]
    (d / "tokenizer.json").write_text(json.dumps(make_tokenizer(vocab)))
    (d / "tokenizer_config.json").write_text(json.dumps(
        {"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>",
         "unk_token": "<unk>"}))
    return d


def run_perplexity(model_dir, text, tmp_path, *args):
    f = tmp_path / "text.txt"
    f.write_text(text, encoding="utf-8")
    out = subprocess.run([str(binary()), "perplexity", str(model_dir), str(f), "--threads", "1",
                          *args], capture_output=True, text=True, timeout=60)
    return out


def test_two_chunks_match_the_reference_logits(model_dir, tmp_path):
    tokens, logits = reference_prompt()
    assert tokens[0] == BOS
    ctx = len(tokens) - 1  # 40: the reference covers a whole chunk
    body = tokens[1:ctx]
    # The second chunk's first token is replaced by BOS, so it is again the reference prompt.
    text = "".join(char_of(t) for t in body + [body[0]] + body)
    from tokenizers import Tokenizer
    hf = Tokenizer.from_str((model_dir / "tokenizer.json").read_text())
    assert hf.encode(text).ids == [BOS] + body + [body[0]] + body

    out = run_perplexity(model_dir, text, tmp_path, "--context", str(ctx))
    assert out.returncode == 0, out.stderr
    chunk = (logits[:ctx], tokens[:ctx])
    running, ppl, err = llama_perplexity([chunk, chunk])
    got_running = [float(x) for x in re.findall(r"\[\d+\]([0-9.]+),", out.stdout)]
    assert got_running == pytest.approx(running, rel=2e-4), out.stdout
    m = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", out.stdout)
    assert m, out.stdout
    assert float(m.group(1)) == pytest.approx(ppl, rel=2e-4)
    assert float(m.group(2)) == pytest.approx(err, rel=2e-3)
    assert "scoring 2 chunks of 40 tokens" in out.stderr


def test_chunks_limit_and_batch_split_agree(model_dir, tmp_path):
    tokens, logits = reference_prompt()
    ctx = 40
    body = tokens[1:ctx]
    text = "".join(char_of(t) for t in body + [body[0]] + body)
    _, ppl, _ = llama_perplexity([(logits[:ctx], tokens[:ctx])])
    for batch in ("40", "7"):  # a chunk in one step, and in steps that split the scored half
        out = run_perplexity(model_dir, text, tmp_path, "--context", "40", "--chunks", "1",
                             "--batch-size", batch)
        assert out.returncode == 0, out.stderr
        m = re.search(r"Final estimate: PPL = ([0-9.]+)", out.stdout)
        assert float(m.group(1)) == pytest.approx(ppl, rel=2e-4), out.stdout


def test_too_short_a_text_is_refused(model_dir, tmp_path):
    out = run_perplexity(model_dir, char_of(10) * 30, tmp_path, "--context", "20")
    assert out.returncode != 0
    assert "tokenizes to 31 tokens; a context of 20 needs at least 40" in out.stderr
