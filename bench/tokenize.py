#!/usr/bin/env python3
"""bench/tokenize: encode MB/s of our tokenizer (the bench/tokenize C++ program) next to the HF
`tokenizers` library, on the same ~10 MB mixed corpus with the same thread count, in one run.

  bench/tokenize.py --bin build/release/bench/tokenize [--threads 1,2] [--shared ../shared]

The corpus is built deterministically from tools/make_tokenizer_corpus.py's strings (prose words,
30+ scripts, emoji and ZWJ sequences, code, digit runs, whitespace runs, special-token look-alikes),
shuffled and joined into ~4 KB documents; it is written as JSON lines, one document per line.
Both sides encode document by document with add_special_tokens=False (special-token text parsed).
At 1 thread HF runs `encode` per document with RAYON_NUM_THREADS=1 and TOKENIZERS_PARALLELISM=false;
at N threads it runs `encode_batch` with RAYON_NUM_THREADS=N, and ours shares documents among N
threads. Each figure is the fastest of --repeat passes; MB = 10^6 bytes of UTF-8 input. The total
id counts of both sides must agree, or the run fails.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKENIZERS = ["qwen3", "llama3"]


def build_corpus(path, target_bytes):
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    from make_tokenizer_corpus import make_strings

    strings = [s for s in make_strings() if s]
    r = random.Random(1234)
    docs, total = [], 0
    while total < target_bytes:
        doc, size = [], 0
        while size < 4000:
            s = r.choice(strings)
            doc.append(s)
            size += len(s.encode()) + 1
        text = "".join(p + r.choice(["\n", " ", "\n\n", ""]) for p in doc)
        docs.append(text)
        total += len(text.encode())
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=True) + "\n")
    os.replace(tmp, path)
    return len(docs), total


def hf_worker(tokenizer_json, corpus, threads, repeat):
    """Runs in a child process so that the rayon pool size is set before tokenizers loads."""
    from tokenizers import Tokenizer

    with open(corpus, encoding="ascii") as f:
        docs = [json.loads(line) for line in f if line.strip()]
    nbytes = sum(len(d.encode()) for d in docs)
    tok = Tokenizer.from_file(tokenizer_json)
    best, ids = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        if threads == 1:
            ids = sum(len(tok.encode(d, add_special_tokens=False).ids) for d in docs)
        else:
            ids = sum(len(e.ids) for e in tok.encode_batch(docs, add_special_tokens=False))
        best = min(best, time.perf_counter() - t0)
    print(json.dumps({"mb_per_s": nbytes / best / 1e6, "ids": ids, "bytes": nbytes}))


def run_hf(tokenizer_json, corpus, threads, repeat):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads),
               TOKENIZERS_PARALLELISM="false" if threads == 1 else "true")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--hf-worker", tokenizer_json,
                          corpus, str(threads), str(repeat)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def run_ours(binary, tokenizer_json, corpus, threads, repeat):
    out = subprocess.run([binary, tokenizer_json, corpus, "--threads", str(threads), "--repeat",
                          str(repeat)], check=True, capture_output=True, text=True).stdout
    fields = dict(kv.split("=") for kv in out.split())
    return {"mb_per_s": float(fields["mb_per_s"]), "ids": int(fields["ids"]),
            "bytes": int(fields["bytes"])}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--hf-worker":
        hf_worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/bench/tokenize"))
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(ROOT), "shared"))
    ap.add_argument("--corpus", default="/tmp/tf_tokenize_corpus.jsonl")
    ap.add_argument("--mb", type=float, default=10.0, help="corpus size in 10^6 bytes")
    ap.add_argument("--threads", default="1", help="comma-separated thread counts, e.g. 1,2")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    ndocs, nbytes = build_corpus(args.corpus, int(args.mb * 1e6))
    import tokenizers

    print(f"corpus: {ndocs} documents, {nbytes / 1e6:.2f} MB ({args.corpus}); "
          f"HF tokenizers {tokenizers.__version__}; best of {args.repeat}")
    print()
    print("| tokenizer | threads | ids | ours MB/s | HF MB/s | ours / HF |")
    print("|---|---|---|---|---|---|")
    ok = True
    for name in TOKENIZERS:
        tj = os.path.join(args.shared, "tokenizers", name, "tokenizer.json")
        for threads in [int(t) for t in args.threads.split(",")]:
            ours = run_ours(args.bin, tj, args.corpus, threads, args.repeat)
            hf = run_hf(tj, args.corpus, threads, args.repeat)
            same = ours["ids"] == hf["ids"]
            ok = ok and same
            ids = str(ours["ids"]) if same else f"MISMATCH ours {ours['ids']} HF {hf['ids']}"
            print(f"| {name} | {threads} | {ids} | {ours['mb_per_s']:.2f} | {hf['mb_per_s']:.2f} "
                  f"| {ours['mb_per_s'] / hf['mb_per_s']:.2f}x |", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
