#!/usr/bin/env python3
"""bench/tokenize: encode MB/s of our tokenizer (the bench/tokenize C++ program) next to the HF
`tokenizers` library, on the same ~10 MB mixed corpus with the same thread count, in one run.

  bench/tokenize.py --bin build/release/bench/tokenize [--threads 1,2] [--shared ../shared]
                    [--tables docs,scale,chat] [--sizes 64K,256K,1M,2M,4M,8M]

The corpus is built deterministically from tools/make_tokenizer_corpus.py's strings (prose words,
30+ scripts, emoji and ZWJ sequences, code, digit runs, whitespace runs, special-token look-alikes),
shuffled and joined into ~4 KB documents; it is written as JSON lines, one document per line.
Both sides encode document by document with add_special_tokens=False (special-token text parsed).
At 1 thread HF runs `encode` per document with RAYON_NUM_THREADS=1 and TOKENIZERS_PARALLELISM=false;
at N threads it runs `encode_batch` with RAYON_NUM_THREADS=N, and ours shares documents among N
threads. Each figure is the fastest of --repeat passes; MB = 10^6 bytes of UTF-8 input. The total
id counts of both sides must agree, or the run fails.

The scale table encodes one text per size (the documents joined and cut at a character boundary)
as a single string on one thread, HF with `encode`: time per MiB stays flat when encoding is linear.
The chat table renders a chat of about --chat-tokens tokens of message content with the model's
own chat template (tokenizer_config.json) and encodes the prompt; HF encodes the same prompt. Both
take the best of at least 20 passes there.
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


def text_of_size(docs, size):
    """The documents joined (cycling) and cut to `size` bytes at a character start, as the C++
    side builds it."""
    parts, total, i = [], 0, 0
    while total < size and docs:
        d = docs[i % len(docs)].encode()
        parts.append(d)
        total += len(d)
        i += 1
    b = b"".join(parts)
    cut = min(size, len(b))
    while 0 < cut < len(b) and (b[cut] & 0xC0) == 0x80:
        cut -= 1
    return b[:cut].decode()


def hf_scale_worker(tokenizer_json, corpus, sizes, repeat):
    from tokenizers import Tokenizer

    with open(corpus, encoding="ascii") as f:
        docs = [json.loads(line) for line in f if line.strip()]
    tok = Tokenizer.from_file(tokenizer_json)
    rows = []
    for size in sizes:
        text = text_of_size(docs, size)
        best, ids = float("inf"), 0
        for _ in range(repeat):
            t0 = time.perf_counter()
            ids = len(tok.encode(text, add_special_tokens=False).ids)
            best = min(best, time.perf_counter() - t0)
        rows.append({"size": size, "ids": ids, "seconds": best})
    print(json.dumps(rows))


def hf_file_worker(tokenizer_json, path, repeat):
    from tokenizers import Tokenizer

    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    tok = Tokenizer.from_file(tokenizer_json)
    best, ids = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        ids = len(tok.encode(text, add_special_tokens=False).ids)
        best = min(best, time.perf_counter() - t0)
    print(json.dumps({"ids": ids, "seconds": best}))


def hf_child(args):
    """Runs a worker in a child process, single-threaded, so that rayon's pool size is set
    before tokenizers loads."""
    env = dict(os.environ, RAYON_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    out = subprocess.run([sys.executable, os.path.abspath(__file__)] + [str(a) for a in args],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def parse_size(s):
    scale = {"K": 1024, "M": 1024 * 1024}.get(s[-1].upper(), 1)
    return int(float(s[:-1] if scale > 1 else s) * scale)


def show_size(n):
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n // 1024} KiB"


def scale_table(args, corpus):
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    print("| tokenizer | size | ids | ours ms | ours MiB/s | ours ms/MiB | HF ms | HF MiB/s "
          "| HF ms/MiB | ours / HF |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ok = True
    for name in TOKENIZERS:
        tj = os.path.join(args.shared, "tokenizers", name, "tokenizer.json")
        out = subprocess.run([args.bin, tj, corpus, "--scale", args.sizes, "--repeat",
                              str(args.repeat)], check=True, capture_output=True, text=True).stdout
        ours = [dict(kv.split("=") for kv in line.split()) for line in out.splitlines()]
        hf = hf_child(["--hf-scale-worker", tj, corpus, ",".join(map(str, sizes)), args.repeat])
        for o, h in zip(ours, hf):
            n, so, sh = int(o["bytes"]), float(o["seconds"]), h["seconds"]
            mib = n / (1024 * 1024)
            same = int(o["ids"]) == h["ids"]
            ok = ok and same
            ids = o["ids"] if same else f"MISMATCH ours {o['ids']} HF {h['ids']}"
            print(f"| {name} | {show_size(int(o['size']))} | {ids} | {so * 1e3:.1f} | "
                  f"{mib / so:.2f} | {so * 1e3 / mib:.0f} | {sh * 1e3:.1f} | {mib / sh:.2f} | "
                  f"{sh * 1e3 / mib:.0f} | {sh / so:.2f}x |", flush=True)
    return ok


def chat_table(args, corpus):
    repeat = min(max(args.repeat, 20), 100)  # one prompt takes milliseconds: time many passes
    print("| tokenizer | prompt tokens | prompt bytes | render ms | encode ms | render + encode ms "
          "| HF encode ms |")
    print("|---|---|---|---|---|---|---|")
    ok = True
    for name in TOKENIZERS:
        tdir = os.path.join(args.shared, "tokenizers", name)
        prompt = f"{corpus}.{name}.chat.txt"
        out = subprocess.run([args.bin, os.path.join(tdir, "tokenizer.json"), corpus, "--chat",
                              os.path.join(tdir, "tokenizer_config.json"), "--chat-tokens",
                              str(args.chat_tokens), "--chat-out", prompt, "--repeat",
                              str(repeat)], check=True, capture_output=True, text=True).stdout
        o = dict(kv.split("=") for kv in out.split())
        hf = hf_child(["--hf-file-worker", os.path.join(tdir, "tokenizer.json"), prompt, repeat])
        same = int(o["chat_tokens"]) == hf["ids"]
        ok = ok and same
        ids = o["chat_tokens"] if same else f"MISMATCH ours {o['chat_tokens']} HF {hf['ids']}"
        render, encode = float(o["render_ms"]), float(o["encode_ms"])
        print(f"| {name} | {ids} | {o['bytes']} | {render:.2f} | {encode:.2f} | "
              f"{render + encode:.2f} | {hf['seconds'] * 1e3:.2f} |", flush=True)
    return ok


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
    if len(sys.argv) > 1 and sys.argv[1] == "--hf-scale-worker":
        sizes = [int(s) for s in sys.argv[4].split(",")]
        hf_scale_worker(sys.argv[2], sys.argv[3], sizes, int(sys.argv[5]))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "--hf-file-worker":
        hf_file_worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/bench/tokenize"))
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(ROOT), "shared"))
    ap.add_argument("--corpus", default="/tmp/tf_tokenize_corpus.jsonl")
    ap.add_argument("--mb", type=float, default=10.0, help="corpus size in 10^6 bytes")
    ap.add_argument("--threads", default="1", help="comma-separated thread counts, e.g. 1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tables", default="docs,scale,chat", help="which of docs,scale,chat to run")
    ap.add_argument("--sizes", default="64K,256K,1M,2M,4M,8M", help="scale table text sizes")
    ap.add_argument("--chat-tokens", type=int, default=32768, help="chat table message tokens")
    args = ap.parse_args()
    tables = args.tables.split(",")

    ndocs, nbytes = build_corpus(args.corpus, int(args.mb * 1e6))
    import tokenizers

    print(f"corpus: {ndocs} documents, {nbytes / 1e6:.2f} MB ({args.corpus}); "
          f"HF tokenizers {tokenizers.__version__}; best of {args.repeat}")
    ok = True
    if "docs" in tables:
        ok = docs_table(args) and ok
    if "scale" in tables:
        print()
        ok = scale_table(args, args.corpus) and ok
    if "chat" in tables:
        print()
        ok = chat_table(args, args.corpus) and ok
    return 0 if ok else 1


def docs_table(args):
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
    return ok


if __name__ == "__main__":
    sys.exit(main())
