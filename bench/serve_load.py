#!/usr/bin/env python3
"""serve_load: a load generator for an OpenAI-compatible server, reporting what `vllm bench serve`
reports (request throughput, output tok/s, TTFT / TPOT / ITL percentiles) over streamed (SSE)
/v1/completions requests with synthetic token-id prompts of exact length.

  bench/serve_load.py http://127.0.0.1:8080/v1 -c 8 --prompt 128 --gen 64
  bench/serve_load.py --start-server build/release/bin/tensorfold -c 8 --prompt 128 --gen 64
  bench/serve_load.py --start-server ... -c 64 --scrape 0.1   # /metrics every 100 ms meanwhile
  bench/serve_load.py --start-server ... -c 4 --api responses --ws   # see bench/serve_apis.py
  bench/serve_load.py URL -c 64 --save now.txt --previous before.txt --engine engine.txt

With --engine FILE (engine_throughput --save for the same prompts, lengths and streams) the
output rate prints beside the engine's own, the ceiling the HTTP/SSE path can only approach.
"""
import argparse
import http.client
import json
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import serve_apis
from results import previous, read_results, save_results


def percentile(values, p):
    """Nearest-rank percentile, as engine_throughput computes it."""
    if not values:
        return 0.0
    v = sorted(values)
    return v[min(int(p / 100 * (len(v) - 1) + 0.5), len(v) - 1)]


def synthetic_prompt(i, length, vocab):
    """The same token ids bench/engine_throughput submits for stream i."""
    return [100 + (t * 7919 + i * 104729) % (vocab - 200) for t in range(length)]


class Result:
    def __init__(self):
        self.ok = False
        self.error = ""
        self.start = self.first = self.end = 0.0
        self.token_times = []
        self.output_tokens = 0
        self.prompt_tokens = 0


def one_request(host, port, prefix, model, prompt, gen, api_key, res):
    """Streams one completion, timing every SSE event that carries text."""
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": gen, "temperature": 0,
                       "ignore_eos": True, "stream": True,
                       "stream_options": {"include_usage": True}})
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    conn = http.client.HTTPConnection(host, port, timeout=600)
    res.start = time.perf_counter()
    try:
        conn.request("POST", prefix + "/completions", body=body, headers=headers)
        resp = conn.getresponse()
        if resp.status != 200:
            res.error = f"HTTP {resp.status}: {resp.read()[:200]!r}"
            return
        for raw in resp:
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            ev = json.loads(data)
            if "error" in ev:
                res.error = ev["error"].get("message", "error event")
                return
            if ev.get("usage"):
                res.output_tokens = ev["usage"]["completion_tokens"]
                res.prompt_tokens = ev["usage"]["prompt_tokens"]
            for c in ev.get("choices", []):
                if c.get("text"):
                    now = time.perf_counter()
                    if not res.token_times:
                        res.first = now
                    res.token_times.append(now)
        res.end = time.perf_counter()
        res.ok = True
    except (OSError, http.client.HTTPException, ValueError) as e:
        res.error = repr(e)
    finally:
        conn.close()


def model_info(host, port, prefix, api_key):
    conn = http.client.HTTPConnection(host, port, timeout=30)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    conn.request("GET", prefix + "/models", headers=headers)
    data = json.loads(conn.getresponse().read())
    conn.close()
    return data["data"][0]["id"]


def api_requester(host, port, prefix, model, api, ws, vocab, api_key):
    """--api: (prompt of stream i, function sending it) for serve_apis' conversation of stream i."""
    headers = {"Authorization": f"Bearer {api_key}", "x-api-key": api_key} if api_key else {}
    if api == "messages":
        headers["anthropic-version"] = "2023-06-01"

    def prompt(i, length):
        ids = synthetic_prompt(i, length, vocab)
        msgs = serve_apis.conversation(host, port, prefix, headers, ids)
        return serve_apis.rendered_ids(host, port, prefix, headers, msgs) \
            if api == "completions" else msgs

    def send(model_, p, gen, _key, res):
        if ws:
            return serve_apis.one_ws(host, port, prefix, headers, model_, p, gen, res)
        return serve_apis.one_http(host, port, prefix, headers, api, model_, p, gen, res)
    return prompt, send


def run_load(url, concurrency, num_requests, prompt_len, gen_len, vocab, api_key, warmup,
             api=None, ws=False, first_prompt=0):
    u = urlparse(url)
    host, port, prefix = u.hostname, u.port or 80, u.path.rstrip("/")
    model = model_info(host, port, prefix, api_key)
    prompt_of = lambda i, n: synthetic_prompt(i, n, vocab)  # noqa: E731
    send = lambda m, p, g, k, res: one_request(host, port, prefix, m, p, g, k, res)  # noqa: E731
    if api:
        prompt_of, send = api_requester(host, port, prefix, model, api, ws, vocab, api_key)
    if warmup:
        send(model, prompt_of(10_000, 8), 4, api_key, Result())
    prompts = [prompt_of(first_prompt + i, prompt_len) for i in range(num_requests)]
    results = [Result() for _ in range(num_requests)]
    next_i = [0]
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                i = next_i[0]
                next_i[0] += 1
            if i >= num_requests:
                serve_apis.close_thread_socket()
                return
            send(model, prompts[i], gen_len, api_key, results[i])

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return model, results, wall


def report(model, results, wall, concurrency, prompt_len, gen_len, before=None, engine=None,
           now=None):
    """Prints the table; keeps the output rate and the TTFT and TPOT medians in `now`, each
    printed beside `before`'s, and the output rate beside the `engine`'s for the same work."""
    before, engine, now = before or {}, engine or {}, now if now is not None else {}
    ok = [r for r in results if r.ok]
    failed = [r for r in results if not r.ok]
    out_tokens = sum(r.output_tokens or len(r.token_times) for r in ok)
    in_tokens = sum(r.prompt_tokens for r in ok)
    ttft = [(r.first - r.start) * 1e3 for r in ok if r.token_times]
    tpot = [(r.end - r.first) * 1e3 / ((r.output_tokens or len(r.token_times)) - 1)
            for r in ok if (r.output_tokens or len(r.token_times)) > 1]
    itl = [(b - a) * 1e3 for r in ok for a, b in zip(r.token_times, r.token_times[1:])]
    print(f"model: {model}; concurrency {concurrency}; {len(results)} requests of "
          f"{prompt_len} prompt tokens, {gen_len} generated")
    print(f"| metric | value |\n|---|---|")
    print(f"| successful / failed requests | {len(ok)} / {len(failed)} |")
    print(f"| benchmark duration (s) | {wall:.2f} |")
    print(f"| request throughput (req/s) | {len(ok) / wall:.2f} |")
    c = concurrency
    now[f"output_tps/{c}"] = out_tokens / wall
    now[f"ttft_p50_ms/{c}"] = percentile(ttft, 50)
    now[f"tpot_p50_ms/{c}"] = percentile(tpot, 50)
    print(f"| output token throughput (tok/s) | {out_tokens / wall:.1f}"
          f"{previous(before, f'output_tps/{c}', out_tokens / wall)} |")
    if engine.get(f"gen_tps/{c}"):
        e = engine[f"gen_tps/{c}"]
        print(f"| the engine's tok/s for the same work / served share | {e:.1f} / "
              f"{out_tokens / wall / e:.2f} |")
    print(f"| total token throughput (tok/s) | {(out_tokens + in_tokens) / wall:.1f} |")
    for name, v in (("TTFT", ttft), ("TPOT", tpot), ("ITL", itl)):
        mean = statistics.fmean(v) if v else 0.0
        key = f"{name.lower()}_p50_ms/{c}"
        print(f"| {name} mean / p50 / p90 / p99 (ms) | {mean:.1f} / {percentile(v, 50):.1f} / "
              f"{percentile(v, 90):.1f} / {percentile(v, 99):.1f}"
              f"{previous(before, key, percentile(v, 50)) if key in now else ''} |")
    for r in failed[:5]:
        print(f"failed: {r.error}", file=sys.stderr)
    return 0 if not failed else 1


class Scraper:
    """--scrape: GETs /metrics every `interval` seconds on its own connection while the load
    runs, timing each scrape, so its cost shows beside the throughput it may lower."""

    def __init__(self, url, interval, api_key):
        u = urlparse(url)
        self.host, self.port, self.interval = u.hostname, u.port or 80, interval
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.times, self.bytes, self.done = [], 0, threading.Event()
        self.thread = threading.Thread(target=self.loop)
        self.thread.start()

    def loop(self):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        while not self.done.wait(self.interval):
            t0 = time.perf_counter()
            conn.request("GET", "/metrics", headers=self.headers)
            resp = conn.getresponse()
            self.bytes = len(resp.read())
            if resp.status != 200:
                sys.exit(f"serve_load: /metrics answered {resp.status}")
            self.times.append((time.perf_counter() - t0) * 1e3)
        conn.close()

    def report(self, cpu_seconds, wall):
        self.done.set()
        self.thread.join()
        v = self.times
        print(f"| /metrics scrapes (every {self.interval * 1e3:.0f} ms) | {len(v)} of "
              f"{self.bytes} bytes |")
        print(f"| /metrics latency mean / p99 (ms) | {statistics.fmean(v) if v else 0:.2f} / "
              f"{percentile(v, 99):.2f} |")
        if cpu_seconds is not None:
            print(f"| server CPU (s) / wall (s) | {cpu_seconds:.2f} / {wall:.2f} |")


def server_cpu_seconds(proc):
    """User + system CPU seconds of a server we started (None otherwise)."""
    if not proc:
        return None
    fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(binary, model_path, concurrency, threads, kv_gib):
    args = [binary, "serve", "--port", "0", "--parallel", str(max(concurrency, 1)),
            "--kv-gib", str(kv_gib)]
    if model_path:
        args.insert(2, model_path)
    if threads:
        args += ["--threads", str(threads)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    buf, deadline = b"", time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"serve_load: the server exited with {proc.returncode}")
        if select.select([proc.stdout], [], [], 0.5)[0]:
            buf += os.read(proc.stdout.fileno(), 4096)
            m = re.search(rb"(http://[\d.]+:\d+/v1)", buf)
            if m:
                return proc, m.group(1).decode()
    proc.kill()
    sys.exit("serve_load: no startup line from the server")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url", nargs="?", help="base URL, e.g. http://127.0.0.1:8080/v1")
    ap.add_argument("-c", "--concurrency", type=int, default=8)
    ap.add_argument("-n", "--num-requests", type=int, default=0,
                    help="requests in all (default: one per concurrent client)")
    ap.add_argument("--prompt", type=int, default=128, help="prompt tokens per request")
    ap.add_argument("--gen", type=int, default=64, help="generated tokens per request")
    ap.add_argument("--vocab", type=int, default=49152, help="vocabulary size for prompt ids")
    ap.add_argument("--first-prompt", type=int, default=0, metavar="K",
                    help="request i sends synthetic prompt K + i, so runs against one server can "
                         "miss its prompt cache (default 0: engine_throughput's stream i is i)")
    ap.add_argument("--api-key", default=os.environ.get("TENSORFOLD_API_KEY", ""))
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--start-server", metavar="BINARY",
                    help="start `BINARY serve` on a free port first (and stop it after)")
    ap.add_argument("--model", default="", help="with --start-server: the model to serve")
    ap.add_argument("--threads", type=int, default=0, help="with --start-server: --threads")
    ap.add_argument("--kv-gib", type=float, default=2.0, help="with --start-server: --kv-gib")
    ap.add_argument("--scrape", type=float, default=0, metavar="SECONDS",
                    help="GET /metrics every SECONDS during the run (0: off)")
    ap.add_argument("--api", choices=serve_apis.APIS,
                    help="send one conversation per stream through this API, greedy and without "
                         "ignore_eos, so every API does the same work (default: /v1/completions "
                         "with token-id prompts and ignore_eos)")
    ap.add_argument("--ws", action="store_true", help="with --api responses: over WebSocket")
    ap.add_argument("--save", metavar="FILE", help="write the figures to FILE (key value lines)")
    ap.add_argument("--previous", metavar="FILE", help="print each figure beside FILE's")
    ap.add_argument("--engine", metavar="FILE",
                    help="engine_throughput --save of the same work: the rate beside the engine's")
    a = ap.parse_args()
    if a.ws and a.api != "responses":
        ap.error("--ws goes with --api responses")
    proc = None
    url = a.url
    if a.start_server:
        proc, url = start_server(a.start_server, a.model, a.concurrency, a.threads, a.kv_gib)
    if not url:
        ap.error("give a URL or --start-server")
    try:
        cpu0 = server_cpu_seconds(proc)
        scraper = Scraper(url, a.scrape, a.api_key) if a.scrape > 0 else None
        model, results, wall = run_load(url, a.concurrency, a.num_requests or a.concurrency,
                                        a.prompt, a.gen, a.vocab, a.api_key, not a.no_warmup,
                                        a.api, a.ws, a.first_prompt)
        if a.api:
            print(f"api: {a.api}{' over WebSocket' if a.ws else ''}")
        now = {}
        rc = report(model, results, wall, a.concurrency, a.prompt, a.gen,
                    read_results(a.previous), read_results(a.engine), now)
        save_results(a.save, now)
        cpu = server_cpu_seconds(proc)
        if scraper:
            scraper.report(cpu - cpu0 if proc else None, wall)
        elif proc:
            print(f"| server CPU (s) / wall (s) | {cpu - cpu0:.2f} / {wall:.2f} |")
    finally:
        if proc:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
    return rc


if __name__ == "__main__":
    sys.exit(main())
