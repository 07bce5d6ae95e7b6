#!/usr/bin/env python3
"""Checks the grammar engine against Python's jsonschema: for every schema from
tools/make_grammar_schemas.py, random walks through the grammar over the Qwen3 vocabulary
(grammar_walk) must all finish, and every output must parse as JSON and validate (formats
checked too); every unsupported schema must be refused with an error naming its keyword.

Usage: check_schemas.py GRAMMAR_WALK [SAMPLES]   (exit 77: skipped, the tokenizer is absent)
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


def main():
    walk = sys.argv[1]
    samples = int(sys.argv[2]) if len(sys.argv) > 2 else 12
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
    proc = subprocess.run([walk, str(TOKENIZER), f.name, str(samples), str(SEED)],
                          capture_output=True, text=True, check=False)
    Path(f.name).unlink()
    if proc.returncode != 0:
        print(proc.stderr)
        return 1
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert len(lines) == len(schemas) + len(bad), "one result line per schema"
    failures, total, valid = [], 0, 0
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    for i, (schema, res) in enumerate(zip(schemas, lines)):
        if "error" in res:
            failures.append(f"schema {i} refused: {res['error']}\n  {json.dumps(schema)}")
            continue
        if res["unfinished"] or res["mismatches"]:
            failures.append(f"schema {i}: {res['unfinished']} unfinished walks, "
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
    print(f"{len(schemas)} schemas, {total} outputs, {valid} valid "
          f"({100.0 * valid / max(total, 1):.2f}%), {len(bad)} refusals checked, "
          f"{time.monotonic() - start:.1f} s")
    for msg in failures[:40]:
        print(msg)
    return 1 if failures or total < len(schemas) * samples else 0


if __name__ == "__main__":
    sys.exit(main())
