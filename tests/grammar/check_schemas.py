#!/usr/bin/env python3
"""Checks the grammar engine against Python's jsonschema: for every schema from
tools/make_grammar_schemas.py, random walks through the grammar over the Qwen3 vocabulary
(grammar_walk) and the engine's sampled replies from a random-weight model constrained by it
(grammar_samples) must all finish, and every output must parse as JSON and validate (formats
checked too); every unsupported schema must be refused with an error naming its keyword.

Usage: check_schemas.py GRAMMAR_WALK [SAMPLES [GRAMMAR_SAMPLES MODEL_DIR]]
(exit 77: skipped, the tokenizer is absent)
"""
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER = ROOT.parent / "shared" / "tokenizers" / "qwen3"
SEED = 20261201


def load_generator():
    spec = importlib.util.spec_from_file_location("make_grammar_schemas",
                                                  ROOT / "tools" / "make_grammar_schemas.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(cmd):
    """One result line per schema from grammar_walk or grammar_samples; None on failure."""
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(proc.stderr)
        return None
    return [json.loads(x) for x in proc.stdout.splitlines()]


def long_context(fixture, out):
    """The fixture with room for long replies: its weights, and its config with 4,096 positions
    (the fixture declares 128; a random model's strings can run past that before they close)."""
    config = json.loads((fixture / "config.json").read_text())
    config["max_position_embeddings"] = 4096
    (out / "config.json").write_text(json.dumps(config))
    (out / "model.safetensors").symlink_to((fixture / "model.safetensors").resolve())


def check(what, schemas, gen, lines, samples):
    """Prints the tally of one producer's outputs; returns its failures."""
    bad = [s for s, _ in gen.UNSUPPORTED]
    assert len(lines) == len(schemas) + len(bad), "one result line per schema"
    failures, total, valid = [], 0, 0
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    for i, (schema, res) in enumerate(zip(schemas, lines)):
        if "error" in res:
            failures.append(f"schema {i} refused: {res['error']}\n  {json.dumps(schema)}")
            continue
        if res["unfinished"] or res["mismatches"]:
            failures.append(f"schema {i}: {res['unfinished']} unfinished, "
                            f"{res['mismatches']} mask/accept mismatches\n  {json.dumps(schema)}")
        validator = jsonschema.Draft202012Validator(schema, format_checker=checker)
        for text in res["outputs"]:
            total += 1
            try:
                validator.validate(json.loads(text))
                valid += 1
            except (ValueError, jsonschema.ValidationError) as e:
                failures.append(f"schema {i}: invalid output {text!r}: {str(e)[:300]}\n"
                                f"  {json.dumps(schema)}")
    for (schema, word), res in zip(gen.UNSUPPORTED, lines[len(schemas):]):
        if word not in res.get("error", ""):
            failures.append(f"unsupported schema not refused by name '{word}': {res}")
    if total < len(schemas) * samples:
        failures.append(f"{what}: {total} outputs of {len(schemas) * samples}")
    print(f"{what}: {len(schemas)} schemas, {total} outputs, {valid} valid "
          f"({100.0 * valid / max(total, 1):.2f}%), {len(bad)} refusals checked")
    return failures


def main():
    walk = sys.argv[1]
    samples = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    engine_run = sys.argv[3:5] if len(sys.argv) > 4 else None  # GRAMMAR_SAMPLES MODEL_DIR
    if not (TOKENIZER / "tokenizer.json").exists():
        print(f"skipped: {TOKENIZER} not found (see DATA.md)")
        return 77
    gen = load_generator()
    schemas = gen.generate(seed=1, count=220)
    bad = [s for s, _ in gen.UNSUPPORTED]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for s in schemas + bad:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")
    start = time.monotonic()
    failures = []
    lines = run([walk, str(TOKENIZER), f.name, str(samples), str(SEED)])
    failures += ["grammar_walk failed"] if lines is None else check(
        "random walks over the Qwen3 vocabulary", schemas, gen, lines, samples)
    if engine_run:
        # The engine with a random-weight model (a committed fixture) drawing under each grammar.
        engine_samples = 3
        with tempfile.TemporaryDirectory() as model:
            long_context(Path(engine_run[1]), Path(model))
            lines = run([engine_run[0], model, f.name, str(engine_samples), str(SEED)])
        failures += ["grammar_samples failed"] if lines is None else check(
            "engine replies of a random-weight model", schemas, gen, lines, engine_samples)
    Path(f.name).unlink()
    print(f"{time.monotonic() - start:.1f} s")
    for msg in failures[:40]:
        print(msg)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
