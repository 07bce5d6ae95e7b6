#!/usr/bin/env python3
"""bench/resume: a conversation growing turn by turn to a long context through the HTTP API; per
measured turn, the time to first token (TTFT) of its prompt resumed from each prompt cache tier
(the KV pool, host RAM, disk, disk after a restart) beside the same length recomputed cold, the
next turn's TTFT on top of the pool, and which tier would lose against recompute. The pool column
is a follow-up sent after a pause (the median of three); the one sent right after the restart's
reply is beside it.

  python3 bench/resume.py --bin build/release/bin/tensorfold --context 16384 --turns 20

The conversation is computed once, by a server that writes every block to a disk tier; each
measurement then starts a server on that directory (so a restart is a fresh process with only the
disk), and a filler prompt as long as the context pushes the conversation out of the KV pool
(into host RAM, or with no RAM tier to disk alone). Only the cold recomputes cost a full prefill:
--measure picks the turns (default all).
"""
import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from conftest import MODEL, Server  # noqa: E402

WORDS = ("the river runs past old stone bridges while boats carry grain and timber toward "
         "the harbour where merchants argue about prices and weather").split()
SYSTEM = "You are a careful assistant."
MAX_TOKENS = 4
POOL_PAUSE = 2  # seconds before each measured follow-up from the pool (the user reading)


def post(server, path, body):
    status, out = server.request("POST", path, body, timeout=3600)
    if status != 200:
        raise RuntimeError(f"{path}: {status} {out}")
    return out


def count(server, messages):
    return post(server, "/tokenize", {"model": "smol", "messages": messages})["count"]


def ttft(server, messages):
    """(seconds to the first streamed token, cached_tokens, prompt_tokens, [(token, logprob)])."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=3600)
    body = {"model": "smol", "messages": messages, "max_tokens": MAX_TOKENS, "temperature": 0,
            "logprobs": True, "stream": True, "stream_options": {"include_usage": True}}
    t0 = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", json.dumps(body),
                 {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"chat: {resp.status} {resp.read()[:500]}")
    first, usage, tokens = None, {}, []
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        ev = json.loads(line[6:])
        for c in ev.get("choices") or []:
            lps = (c.get("logprobs") or {}).get("content") or []
            if lps and first is None:
                first = time.perf_counter() - t0
            tokens += [(t["token"], t["logprob"]) for t in lps]
        usage = ev.get("usage") or usage
    conn.close()
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    return first, cached, usage.get("prompt_tokens", 0), tokens


def user_text(turn, n_words):
    return " ".join(WORDS[(turn * 7 + i) % len(WORDS)] for i in range(n_words))


def build_turns(server, turns, tokens):
    """Each turn's messages, the last one `tokens` long; each user message sized with /tokenize."""
    msgs, out = [{"role": "system", "content": SYSTEM}], []
    one = count(server, msgs + [{"role": "user", "content": user_text(0, 1)}])
    per_word = (count(server, msgs + [{"role": "user", "content": user_text(0, 1001)}]) - one) / 1000
    for t in range(turns):
        goal = tokens * (t + 1) // turns
        n_words = 1
        for _ in range(3):  # tokens per word is nearly constant: two corrections converge
            n = count(server, msgs + [{"role": "user", "content": user_text(t, n_words)}])
            n_words = max(1, n_words + round((goal - n) / per_word))
        msgs = msgs + [{"role": "user", "content": user_text(t, n_words)}]
        out.append(list(msgs))
        msgs = msgs + [{"role": "assistant", "content": f"Noted, part {t + 1}."}]
    return out


def filler(server, tokens, tag):
    """A conversation of about `tokens` tokens sharing no block with the measured one."""
    head = [{"role": "system", "content": f"[{tag}] You are a filler."}]
    lo, hi = 1, tokens
    while lo < hi:  # the most words that stay within `tokens`
        mid = (lo + hi + 1) // 2
        if count(server, head + [{"role": "user", "content": user_text(3, mid)}]) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    return head + [{"role": "user", "content": user_text(3, lo)}]


def kv_bytes_per_token(bin_path, model, backend):
    info = subprocess.run([bin_path, "info", str(model)], capture_output=True, text=True,
                          check=True).stdout
    layers = int(re.search(r"layers:\s+(\d+)", info).group(1))
    kv_heads, head_dim = map(int, re.search(r"(\d+) key/value, head dim (\d+)", info).groups())
    declared = int(re.search(r"context:\s+(\d+)", info).group(1))
    element = 2 if backend == "cuda" else 4  # the pool's rows: bf16 on a GPU, f32 on the CPU
    return 2 * layers * kv_heads * head_dim * element, declared


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=str(ROOT / "build" / "release" / "bin" / "tensorfold"))
    ap.add_argument("--model", default=str(MODEL))
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--context", type=int, default=16384, help="tokens at the last turn")
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--measure", default="all",
                    help="turns to measure, comma-separated (1-based), or 'all'")
    ap.add_argument("--threads", default="0")
    ap.add_argument("--max-batch-tokens", default="512")
    ap.add_argument("--kv-gib", type=float, help="the KV pool (default: the context, fitted)")
    ap.add_argument("--dir", help="the disk tier's directory (default: a temporary one)")
    ap.add_argument("--logs", help="a directory for each server's output (server-N.log)")
    a = ap.parse_args()
    os.environ["TF_BIN"] = a.bin
    per_token, declared = kv_bytes_per_token(a.bin, a.model, a.backend)
    served = a.context + 256  # the last turn, its reply and the filler's margin
    if served > declared > 0:
        print(f"note: the model declares a context of {declared}; serving {served} positions "
              f"(past it, replies are not the model's trained behaviour; the compute is the same)")
    block = 16
    pool_blocks = (served + block - 1) // block + 1
    kv_gib = a.kv_gib or pool_blocks * block * per_token / 2**30
    common = ["--backend", a.backend, "--threads", a.threads, "--context", str(served),
              "--kv-gib", f"{kv_gib:.6f}", "--parallel", "1", "--max-batch-tokens",
              a.max_batch_tokens, "--prompt-cache-disk-gib", "1000"]
    tmp = Path(tempfile.mkdtemp(prefix="tf-resume-"))
    disk = Path(a.dir) if a.dir else tmp / "kv"
    with_ram = common + ["--prompt-cache-gib", f"{4 * kv_gib:.3f}", "--prompt-cache-dir", str(disk)]
    disk_only = common + ["--prompt-cache-gib", "0", "--prompt-cache-dir", str(disk)]
    measure = (range(1, a.turns + 1) if a.measure == "all"
               else sorted({int(x) for x in a.measure.split(",")}))
    rows = {t: {"turn": t} for t in measure}
    stopped = []

    def stop(server):
        if a.logs:  # read before stop() removes it
            Path(a.logs).mkdir(parents=True, exist_ok=True)
            Path(a.logs, f"server-{len(stopped)}.log").write_text(server.output())
        server.stop()
        stopped.append(server)

    # The conversation, turn by turn, in one server: each turn follows the last from the pool.
    s = Server(disk_only, model=a.model)
    try:
        turns = build_turns(s, a.turns, a.context)
        fill = filler(s, served - MAX_TOKENS - block - 8, time.time_ns())
        for t, msgs in enumerate(turns, start=1):
            sec, cached, prompt, ref = ttft(s, msgs)
            if t in rows:
                rows[t].update(next=sec, prompt=prompt, next_cached=cached, ref=ref, same=True)
        ttft(s, fill)  # written to disk too: each server below loads it to empty the pool
    finally:
        stop(s)

    def check(r, key, result):
        sec, cached, _, lps = result
        r[key], r[key + "_cached"] = sec, cached
        r["same"] = r["same"] and lps == r["ref"]

    for t in measure:
        r, msgs = rows[t], turns[t - 1]
        print(f"turn {t}: {r['prompt']} tokens", file=sys.stderr, flush=True)
        s = Server(with_ram, model=a.model)  # a restart: only the disk holds the conversation
        try:
            check(r, "restart", ttft(s, msgs))
            # Sent at once, a follow-up shares the GPU with its start-up work (the RAM tier pinning
            # its budget, first-use allocations) and waits for the step in flight of the reply's
            # next-turn prefill; a conversation's follow-up comes once the reply is read. The pool
            # column is the median of three, each after a pause; the one sent at once is beside it.
            check(r, "pool_first", ttft(s, msgs))
            pools = []
            for _ in range(3):
                time.sleep(POOL_PAUSE)
                pools.append(ttft(s, msgs))
            for p in pools:
                check(r, "pool", p)
            r["pool"] = statistics.median(p[0] for p in pools)
            ttft(s, fill)  # the conversation goes down to host RAM
            check(r, "ram", ttft(s, msgs))
            nonce = [{"role": "system", "content": f"[{time.time_ns()}] {SYSTEM}"}] + msgs[1:]
            r["cold"], _, r["cold_prompt"], _ = ttft(s, nonce)
        finally:
            stop(s)
        s = Server(disk_only, model=a.model)
        try:
            ttft(s, fill)  # the pool holds the filler; the conversation is on disk alone
            check(r, "disk", ttft(s, msgs))
        finally:
            stop(s)
        print("  " + " ".join(f"{k} {r[k]:.3f}" for k in ("cold", "next", "pool", "pool_first",
                                                          "ram", "disk", "restart")),
              file=sys.stderr, flush=True)
    if not a.dir:
        shutil.rmtree(tmp, ignore_errors=True)
    return report([rows[t] for t in measure])


def report(rows):
    tiers = ("pool", "ram", "disk", "restart")
    print(f"{'turn':>4} {'tokens':>6} {'cached pool/ram/disk/restart':>29} {'cold s':>8} "
          f"{'next s':>7} {'pool s':>7} {'1st s':>7} {'ram s':>7} {'disk s':>7} {'restart s':>9} "
          f"{'cold/restart':>12} same")
    losers = []
    for r in rows:
        cached = "/".join(str(r[k + "_cached"]) for k in tiers)
        print(f"{r['turn']:>4} {r['prompt']:>6} {cached:>29} {r['cold']:8.3f} {r['next']:7.3f} "
              f"{r['pool']:7.3f} {r['pool_first']:7.3f} {r['ram']:7.3f} {r['disk']:7.3f} "
              f"{r['restart']:9.3f} "
              f"{r['cold'] / r['restart']:11.1f}x {'yes' if r['same'] else 'NO'}")
        losers += [f"turn {r['turn']}: {k} {r[k]:.3f} s >= cold {r['cold']:.3f} s"
                   for k in tiers if r[k] >= r["cold"]]
    print("tiers slower than recompute: " + ("; ".join(losers) if losers else "none"))
    last = rows[-1]
    print(f"last measured turn ({last['prompt']} tokens): resumed after a restart "
          f"{last['cold'] / last['restart']:.1f}x faster than cold")
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
