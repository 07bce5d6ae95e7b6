"""/dashboard in a real browser: headless Chromium (Debian's `chromium`) loads the page while
requests run, driven over the DevTools protocol; the DOM must hold every chart, drawn by Chart.js
with data, values that change as requests finish, and the cached conversations' table. A screenshot is saved as a test artifact."""
import base64
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import MODEL_NAME, ROOT, Server, _require_binary_and_model

CHARTS = ["chart-throughput", "chart-latency", "chart-requests", "chart-kv", "chart-tiers"]
ARTIFACTS = Path(os.environ.get("TF_TEST_ARTIFACTS", ROOT / "build" / "test-artifacts"))


def browser_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("no chromium binary (scripts/setup installs Debian's chromium)")


class DevTools:
    """One page target over the DevTools protocol (websockets' sync client)."""

    def __init__(self, ws_url):
        from websockets.sync.client import connect
        self.ws = connect(ws_url, max_size=64 << 20, open_timeout=10)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=20))
            if msg.get("id") == self.next_id:
                assert "error" not in msg, msg
                return msg["result"]

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        assert "exceptionDetails" not in r, r
        return r["result"].get("value")


def start_browser(url, profile):
    proc = subprocess.Popen(
        [browser_binary(), "--headless=new", "--no-sandbox", "--disable-gpu",
         "--disable-dev-shm-usage", "--no-first-run", "--window-size=1400,1000",
         f"--user-data-dir={profile}", "--remote-debugging-port=0", url],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port_file = Path(profile) / "DevToolsActivePort"
    deadline = time.monotonic() + 15
    while not port_file.exists() or not port_file.read_text().strip():
        assert proc.poll() is None, "chromium exited"
        assert time.monotonic() < deadline, "chromium never opened its DevTools port"
        time.sleep(0.05)
    port = int(port_file.read_text().split()[0])
    while True:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as r:
            pages = [t for t in json.load(r) if t["type"] == "page" and "/dashboard" in t["url"]]
        if pages:
            return proc, DevTools(pages[0]["webSocketDebuggerUrl"])
        assert time.monotonic() < deadline, "no dashboard page target"
        time.sleep(0.05)


def test_dashboard_in_chromium(tmp_path):
    _require_binary_and_model()
    browser_binary()
    s = Server(["--dashboard"])
    stop = threading.Event()
    finished = []

    def load():
        i = 0
        while not stop.is_set():
            status, _ = s.request("POST", "/v1/completions",
                                  {"model": MODEL_NAME, "prompt": f"Tell me about {i}",
                                   "max_tokens": 24, "temperature": 0, "ignore_eos": True})
            finished.append(status)
            i += 1

    workers = [threading.Thread(target=load) for _ in range(2)]
    proc = None
    try:
        for w in workers:
            w.start()
        proc, page = start_browser(f"http://{s.host}:{s.port}/dashboard", tmp_path / "profile")

        def snapshot():
            return page.eval("""(() => ({
                polls: Number(document.body.dataset.polls || 0),
                finished: document.getElementById('stat-finished').textContent,
                decode: document.getElementById('stat-decode').textContent,
                rows: document.querySelectorAll('#recent tbody tr').length,
                states: document.querySelectorAll('#states tbody tr').length,
                charts: %s.map((id) => {
                  const el = document.getElementById(id);
                  const c = el && Chart.getChart(el);
                  return {id, canvas: !!el && el.tagName === 'CANVAS', chart: !!c,
                          points: c ? c.data.datasets.map((d) => d.data.length) : [],
                          width: el ? el.width : 0};
                }),
              }))()""" % json.dumps(CHARTS))

        deadline = time.monotonic() + 12
        while not page.eval("document.readyState === 'complete' && !!window.Chart && "
                            "!!document.body.dataset.polls"):
            assert time.monotonic() < deadline, "the dashboard never loaded and polled"
            time.sleep(0.1)
        first = snapshot()
        while first["polls"] < 2:
            assert time.monotonic() < deadline, first
            time.sleep(0.2)
            first = snapshot()
        time.sleep(2.5)
        second = snapshot()
        while (second["finished"] == first["finished"] or second["rows"] == 0) and \
                time.monotonic() < deadline:
            time.sleep(0.3)
            second = snapshot()

        for c in second["charts"]:
            assert c["canvas"] and c["chart"], c
            assert c["width"] > 0 and all(n > 0 for n in c["points"]), c
        assert second["polls"] >= first["polls"] + 2  # polling once a second
        assert second["finished"] != first["finished"], (first, second)
        assert int(second["finished"]) > 0 and second["rows"] > 0 and second["states"] > 0
        decode = page.eval("Chart.getChart('chart-throughput').data.datasets[0].data")
        assert any(v and v > 0 for v in decode), decode

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = page.call("Page.captureScreenshot", format="png")
        (ARTIFACTS / "dashboard.png").write_bytes(base64.b64decode(shot["data"]))
        assert (ARTIFACTS / "dashboard.png").stat().st_size > 10000
    finally:
        stop.set()
        for w in workers:
            w.join(timeout=30)
        if proc:
            proc.kill()
            proc.wait()
        assert s.stop() == 0
    assert finished and all(st == 200 for st in finished)


def test_dashboard_off_by_default_and_keyed(tmp_path):
    _require_binary_and_model()
    keys = tmp_path / "keys.txt"
    keys.write_text("ops:sk-ops\n")
    s = Server(["--dashboard", "--api-key-file", str(keys)])
    try:
        # The page and its scripts carry no data: open. What they show (/stats) needs the key,
        # which the page takes from its URL fragment (#key=...).
        status, page = s.request("GET", "/dashboard")
        assert status == 200 and b"<canvas id=\"chart-tiers\">" in page
        status, js = s.request("GET", "/dashboard/chart.js")
        assert status == 200 and b"Chart.js v3" in js[:200]
        assert s.request("GET", "/stats")[0] == 401
        assert s.request("GET", "/stats", headers={"Authorization": "Bearer sk-ops"})[0] == 200
    finally:
        assert s.stop() == 0
    plain = Server()
    try:
        status, body = plain.request("GET", "/dashboard")
        assert status == 404 and "--dashboard" in body["error"]["message"]
    finally:
        assert plain.stop() == 0
