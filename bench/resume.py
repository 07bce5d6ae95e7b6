#!/usr/bin/env python3
"""bench/resume: a conversation growing turn by turn through the HTTP API; per turn, the time to
first token (TTFT) computed cold, resumed from the KV pool, from host RAM, from disk, and from disk
after a restart. Prints a table and the restart-vs-cold ratio at the last turn.

  python3 bench/resume.py --bin build/release/bin/tensorfold --context 16384 --turns 6
"""
import argparse
import json
import http.client
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from conftest import MODEL, Server  # noqa: E402

WORDS = ("the river runs past old stone bridges while boats carry grain and timber toward "
         "the harbour where merchants argue about prices and weather ").split()


def ttft(server, messages):
    """Seconds to the first streamed content chunk, and the cached_tokens the server reported."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=3600)
    body = {"model": "smol", "messages": messages, "max_tokens": 4, "temperature": 0,
            "stream": True, "stream_options": {"include_usage": True}}
    t0 = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", json.dumps(body),
                 {"Content-Type": "application/json"})
    resp = conn.getresponse()
    first, cached, text = None, None, ""
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        ev = json.loads(line[6:])
        if ev.get("choices") and ev["choices"][0]["delta"].get("content") and first is None:
            first = time.perf_counter() - t0
        if ev.get("usage"):
            cached = (ev["usage"].get("prompt_tokens_details") or {}).get("cached_tokens", 0)
        if ev.get("choices"):
            text += ev["choices"][0]["delta"].get("content") or ""
    conn.close()
    return (first if first is not None else time.perf_counter() - t0), cached, text


def build_turns(turns, context):
    per_turn = context // turns
    msgs, out = [{"role": "system", "content": "You are a careful assistant."}], []
    for t in range(turns):
        words = [WORDS[(t * 7 + i) % len(WORDS)] for i in range(int(per_turn * 0.72))]
        msgs = msgs + [{"role": "user", "content": " ".join(words)}]
        out.append(list(msgs))
        msgs = msgs + [{"role": "assistant", "content": f"Noted, part {t + 1}."}]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "build" / "release" / "bin" / "tensorfold"))
    ap.add_argument("--model", default=str(MODEL))
    ap.add_argument("--context", type=int, default=16384)
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--threads", default="0")
    a = ap.parse_args()
    import os
    os.environ["TF_BIN"] = a.bin
    kv_gib = f"{1.25 * a.context * 30 * 3 * 64 * 2 * 4 / 2**30:.3f}"  # one conversation's pool
    common = ["--backend", "cpu", "--threads", a.threads, "--context", str(a.context + 512),
              "--kv-gib", kv_gib, "--parallel", "1", "--max-batch-tokens", "512"]
    tmp = Path(tempfile.mkdtemp(prefix="tf-resume-"))
    ram = common + ["--prompt-cache-gib", "8"]
    disk = common + ["--prompt-cache-gib", "0", "--prompt-cache-dir", str(tmp / "kv"),
                     "--prompt-cache-disk-gib", "64"]
    rows = []
    turns = build_turns(a.turns, a.context)
    s_ram, s_disk = Server(ram, model=a.model), Server(disk, model=a.model)
    try:
        for t, msgs in enumerate(turns):
            nonce = [{"role": "system", "content": f"[{time.time_ns()}] You are a careful assistant."}] + msgs[1:]
            pool, c_pool, ref = ttft(s_ram, msgs)        # follows turn t-1: resumes from the pool
            cold, _, _ = ttft(s_ram, nonce)               # recomputed; pushes turn t out of the pool
            from_ram, c_ram, t_ram = ttft(s_ram, msgs)    # back from host RAM
            ttft(s_disk, msgs)                            # seeds the disk tier
            ttft(s_disk, nonce)
            from_disk, c_disk, t_disk = ttft(s_disk, msgs)
            rows.append({"turn": t + 1, "cold": cold, "pool": pool, "ram": from_ram,
                         "disk": from_disk, "cached": (c_pool, c_ram, c_disk),
                         "same": ref == t_ram == t_disk, "msgs": msgs, "ref": ref})
    finally:
        s_ram.stop()
        s_disk.stop()
    for r in rows:  # after a restart: only the disk holds the conversation
        s = Server(disk, model=a.model)
        try:
            r["restart"], c, text = ttft(s, r["msgs"])
            r["same"] = r["same"] and text == r["ref"]
            r["cached"] += (c,)
        finally:
            s.stop()
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'turn':>4} {'cached (pool/ram/disk/restart)':>32} {'cold s':>8} {'pool s':>8} "
          f"{'ram s':>8} {'disk s':>8} {'restart s':>9} {'cold/restart':>12} same")
    for r in rows:
        print(f"{r['turn']:>4} {'/'.join(str(c) for c in r['cached']):>32} {r['cold']:8.3f} "
              f"{r['pool']:8.3f} {r['ram']:8.3f} {r['disk']:8.3f} {r['restart']:9.3f} "
              f"{r['cold'] / r['restart']:11.1f}x {'yes' if r['same'] else 'NO'}")
    last = rows[-1]
    print(f"last turn: after a restart {last['cold'] / last['restart']:.1f}x faster than cold "
          f"(target 20x)")
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
