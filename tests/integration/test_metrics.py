"""/metrics and /stats on the real binary: names and types against vLLM's list, read back through a
real Prometheus server (Debian's `prometheus`) scraping every second, and the JSONL request log."""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import MODEL_NAME, Server, _require_binary_and_model

# The list: vLLM's names, each with its type.
VLLM_METRICS = {
    "vllm:num_requests_running": "gauge",
    "vllm:num_requests_waiting": "gauge",
    "vllm:kv_cache_usage_perc": "gauge",
    "vllm:prompt_tokens_total": "counter",
    "vllm:generation_tokens_total": "counter",
    "vllm:request_success_total": "counter",
    "vllm:num_preemptions_total": "counter",
    "vllm:prefix_cache_queries_total": "counter",
    "vllm:prefix_cache_hits_total": "counter",
    "vllm:time_to_first_token_seconds": "histogram",
    "vllm:inter_token_latency_seconds": "histogram",
    "vllm:e2e_request_latency_seconds": "histogram",
    "vllm:request_queue_time_seconds": "histogram",
    "vllm:request_prefill_time_seconds": "histogram",
    "vllm:request_decode_time_seconds": "histogram",
    "vllm:request_prompt_tokens": "histogram",
    "vllm:request_generation_tokens": "histogram",
}
# Published only when the engine drafts (an unmeasured figure is left out, never a constant 0).
SPEC_DECODE = ["vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total",
               "vllm:spec_decode_num_accepted_tokens_total"]


def parse_exposition(text):
    """{family: type} and [(name, {labels}, value)] from Prometheus text format 0.0.4."""
    types, samples = {}, []
    sample_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
    label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ")
            assert name not in types, f"family {name} declared twice"
            types[name] = typ
        elif line and not line.startswith("#"):
            m = sample_re.match(line)
            assert m, f"unparsable sample line {line!r}"
            samples.append((m.group(1), dict(label_re.findall(m.group(3) or "")),
                            float(m.group(4))))
    return types, samples


def complete(s, prompt, max_tokens=8, headers=None, stream=False):
    status, body = s.request("POST", "/v1/completions",
                             {"model": MODEL_NAME, "prompt": prompt, "max_tokens": max_tokens,
                              "temperature": 0, "ignore_eos": True, "stream": stream},
                             headers=headers)
    assert status == 200, body
    return body


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    _require_binary_and_model()
    log = tmp_path_factory.mktemp("reqlog") / "requests.jsonl"
    s = Server(["--request-log", str(log), "--log-prompts"])
    s.request_log = log
    yield s
    assert s.stop() == 0


def test_metric_names_types_and_labels(srv):
    complete(srv, "Hello there", 4)
    status, text = srv.request("GET", "/metrics")
    assert status == 200
    types, samples = parse_exposition(text.decode())
    for name, typ in VLLM_METRICS.items():
        assert types.get(name) == typ, f"{name}: {types.get(name)} (want {typ})"
    drafted = [n for n in SPEC_DECODE if n in types]
    assert drafted in ([], SPEC_DECODE), drafted
    assert all(types[n] == "counter" for n in drafted)
    for name, labels, _ in samples:
        assert labels.get("model_name") == MODEL_NAME, (name, labels)
    reasons = {l["finished_reason"] for n, l, _ in samples if n == "vllm:request_success_total"}
    assert reasons == {"stop", "length", "abort", "error"}
    # Histograms: cumulative buckets ending in +Inf equal to _count.
    for name in (n for n, t in VLLM_METRICS.items() if t == "histogram"):
        buckets = [(l["le"], v) for n, l, v in samples if n == name + "_bucket"]
        assert buckets[-1][0] == "+Inf"
        values = [v for _, v in buckets]
        assert values == sorted(values), name
        count = [v for n, _, v in samples if n == name + "_count"]
        assert count == [values[-1]], name
    tiers = {l["tier"] for n, l, _ in samples if n == "tensorfold:prompt_cache_blocks"}
    assert "pool" in tiers
    # Hits by the lowest tier a prefix came from add up to all hits.
    assert types["tensorfold:prompt_cache_tier_hits_total"] == "counter"
    by_tier = {l["tier"]: v for n, l, v in samples if n == "tensorfold:prompt_cache_tier_hits_total"}
    assert set(by_tier) == tiers
    assert sum(by_tier.values()) == [v for n, _, v in samples
                                     if n == "tensorfold:prompt_cache_hits_total"][0]
    routes = {(l["route"], l["status"]) for n, l, _ in samples
              if n == "tensorfold:http_requests_total"}
    assert ("/v1/completions", "200") in routes
    # No keys configured: no per-key families.
    assert not any(n.startswith("tensorfold:api_key") for n in types)


def test_counts_move_with_requests(srv):
    def scrape():
        _, text = srv.request("GET", "/metrics")
        _, samples = parse_exposition(text.decode())
        return {(n, tuple(sorted(l.items()))): v for n, l, v in samples}
    before = scrape()
    usages = [complete(srv, f"Count to {i}", 5 + i)["usage"] for i in range(3)]
    after = scrape()
    key = lambda n, **l: (n, tuple(sorted({"model_name": MODEL_NAME, **l}.items())))
    delta = lambda k: after.get(k, 0) - before.get(k, 0)
    assert delta(key("vllm:request_success_total", finished_reason="length")) == 3
    assert delta(key("vllm:generation_tokens_total")) == sum(u["completion_tokens"] for u in usages)
    assert delta(key("vllm:prompt_tokens_total")) == sum(u["prompt_tokens"] for u in usages)
    assert delta(key("vllm:e2e_request_latency_seconds_count")) == 3
    assert delta(key("vllm:time_to_first_token_seconds_count")) == 3
    # Every token after a request's first came after an inter-token gap: one per step, fewer
    # when steps carry several tokens (drafting).
    gaps = delta(key("vllm:inter_token_latency_seconds_count"))
    if any(n.startswith("vllm:spec_decode") for n, _ in after):
        assert 0 < gaps <= sum(u["completion_tokens"] - 1 for u in usages)
    else:
        assert gaps == sum(u["completion_tokens"] - 1 for u in usages)
    assert delta(key("tensorfold:http_requests_total", route="/v1/completions", status="200")) == 3


def test_stats_json(srv):
    body = complete(srv, "Stats please, " * 8, 6)
    time.sleep(1.2)  # one sample of the once-a-second history
    status, s = srv.request("GET", "/stats")
    assert status == 200
    assert s["model"] == MODEL_NAME
    assert {"running", "waiting", "finished"} <= set(s["requests"])
    assert s["throughput"]["window_seconds"] >= 1
    assert s["latency"]["ttft_seconds"]["p50"] > 0
    assert s["latency"]["tpot_seconds"]["p90"] > 0
    assert 0 <= s["kv_cache"]["usage"] <= 1
    pool = s["prompt_cache"]["tiers"][0]
    assert pool["tier"] == "pool"
    # The conversation just served is the pool's most recent state, at its whole blocks.
    used = body["usage"]["prompt_tokens"] + 6 - 1
    state = pool["states"][0]
    assert state["tokens"] == used // 16 * 16 > 0 and len(state["key"]) == 32
    assert 0 < s["time"] - state["used_at"] < 60
    assert s["memory"]["weights_bytes"] > 0 and s["memory"]["resident_bytes"] > 0
    assert s["history"] and {"decode_tps", "kv_usage", "ttft_p50"} <= set(s["history"][-1])
    recent = s["recent_requests"][0]
    assert recent["route"] == "/v1/completions" and recent["completion_tokens"] == 6
    if "drafting" in s:  # present once the engine has drafted
        d = s["drafting"]
        assert d["drafts"] > 0 and 0 <= d["accepted_tokens"] <= d["draft_tokens"]


def test_request_log_lines(srv):
    body = complete(srv, "Log this prompt", 3)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        lines = [json.loads(l) for l in srv.request_log.read_text().splitlines()]
        mine = [l for l in lines if l.get("prompt") == "Log this prompt"]
        if mine:
            break
        time.sleep(0.05)
    assert mine, lines[-3:]
    line = mine[-1]
    assert line["route"] == "/v1/completions" and line["status"] == 200
    assert line["key"] is None
    assert line["prompt_tokens"] == body["usage"]["prompt_tokens"]
    assert line["completion_tokens"] == 3 and line["finish_reason"] == "length"
    assert line["cached_tokens"] >= 0
    t = line["timings"]
    assert 0 < t["ttft"] <= t["e2e"] and t["decode"] >= 0 and t["queued"] >= 0
    # Scrapes and health checks stay out of the log.
    assert not any(l["route"] in ("/metrics", "/health", "/stats") for l in lines)


def test_request_log_without_prompts(tmp_path):
    _require_binary_and_model()
    log = tmp_path / "r.jsonl"
    s = Server(["--request-log", str(log)])
    try:
        complete(s, "Secret prompt", 2)
        s.request("GET", "/v1/nowhere")
    finally:
        assert s.stop() == 0
    lines = [json.loads(l) for l in log.read_text().splitlines()]
    # A line is written when its request ends, which for the completion may come after the
    # 404 was already answered and logged: the order between them is not defined.
    assert sorted(l["status"] for l in lines) == [200, 404]
    assert [l["route"] for l in lines if l["status"] == 200] == ["/v1/completions"]
    assert all("prompt" not in l for l in lines)


# ---- A real Prometheus ---------------------------------------------------------------------

def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Prometheus:
    def __init__(self, target, tmp):
        binary = shutil.which("prometheus")
        if not binary:
            pytest.skip("the prometheus binary is missing (scripts/setup installs Debian's)")
        cfg = Path(tmp) / "prometheus.yml"
        cfg.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                       "scrape_configs:\n  - job_name: tensorfold\n    scrape_interval: 1s\n"
                       f"    static_configs:\n      - targets: ['{target}']\n")
        self.port = free_port()
        self.log = open(Path(tmp) / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={cfg}", f"--storage.tsdb.path={Path(tmp) / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def query(self, expr):
        url = (f"http://127.0.0.1:{self.port}/api/v1/query?" +
               urllib.parse.urlencode({"query": expr}))
        with urllib.request.urlopen(url, timeout=5) as resp:
            body = json.load(resp)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def value(self, expr):
        r = self.query(expr)
        return float(r[0]["value"][1]) if r else None

    def wait_for(self, expr, ok, timeout=15):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.value(expr)
                if last is not None and ok(last):
                    return last
            except OSError:
                pass  # not listening yet
            time.sleep(0.25)
        raise AssertionError(f"{expr}: {last} after {timeout}s")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.log.close()


def test_prometheus_reads_the_figures_back(srv, tmp_path):
    prom = Prometheus(f"127.0.0.1:{srv.port}", tmp_path)
    try:
        prom.wait_for('up{job="tensorfold"}', lambda v: v == 1)
        success = 'sum(vllm:request_success_total{model_name="%s"})' % MODEL_NAME
        base = prom.wait_for(success, lambda v: v >= 0)
        time.sleep(1.5)  # a second sample at the base, so the rate window starts flat
        sent = 4
        tokens = sum(complete(srv, f"Prometheus {i}", 12)["usage"]["completion_tokens"]
                     for i in range(sent))
        moved = prom.wait_for(success, lambda v: v >= base + sent)
        assert moved == base + sent  # exactly the requests sent
        # A counter's rate over the window covering the requests is positive, and its increase
        # is the generated tokens (extrapolation aside: checked with Prometheus' own increase()).
        rate = prom.wait_for("rate(vllm:generation_tokens_total[15s])", lambda v: v > 0)
        assert rate > 0
        # Prometheus parsed the exposition exactly: its newest value is the server's own.
        _, text = srv.request("GET", "/metrics")
        direct = {n: v for n, l, v in parse_exposition(text.decode())[1]}
        prom.wait_for("vllm:generation_tokens_total",
                      lambda v: v == direct["vllm:generation_tokens_total"])
        assert direct["vllm:generation_tokens_total"] >= tokens
        # A quantile from the histogram's buckets: finite and within the bucket range.
        q = prom.wait_for(
            "histogram_quantile(0.9, sum by (le) "
            "(rate(vllm:e2e_request_latency_seconds_bucket[15s])))",
            lambda v: v == v and v > 0)  # not NaN
        assert 0 < q <= 7680
        ttft = prom.wait_for(
            "histogram_quantile(0.5, sum by (le) "
            "(increase(vllm:time_to_first_token_seconds_bucket[15s])))",
            lambda v: v == v and v > 0)
        assert ttft < 10
    finally:
        prom.stop()


def test_websocket_turns_are_measured_and_logged(srv):
    from websockets.sync.client import connect

    def success():
        _, text = srv.request("GET", "/metrics")
        return sum(v for n, _, v in parse_exposition(text.decode())[1]
                   if n == "vllm:request_success_total")
    before = success()
    with connect(f"ws://{srv.host}:{srv.port}/v1/responses") as ws:
        for i in range(2):
            ws.send(json.dumps({"type": "response.create", "model": MODEL_NAME,
                                "input": f"Turn {i}", "max_output_tokens": 4,
                                "temperature": 0}))
            while json.loads(ws.recv(timeout=60))["type"] not in (
                    "response.completed", "response.incomplete", "response.failed", "error"):
                pass
    assert success() == before + 2  # each turn is a generation
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        lines = [json.loads(l) for l in srv.request_log.read_text().splitlines()]
        ws_lines = [l for l in lines if l["route"] == "/v1/responses" and l["status"] == 101]
        if ws_lines:
            break
        time.sleep(0.05)
    assert len(ws_lines) == 1, lines[-3:]  # one line for the connection, its turns summed
    assert ws_lines[0]["completion_tokens"] == 8 and ws_lines[0]["prompt"]
