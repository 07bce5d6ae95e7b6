"""Starts the real `tensorfold serve` binary on a free loopback port for the integration tests."""
import http.client
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL_NAME = "smollm2"
HOME = Path(os.environ.get("TENSORFOLD_HOME", Path.home() / ".cache" / "tensorfold"))
MODEL = HOME / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def binary() -> Path:
    """The tensorfold binary under test: $TF_BIN, else the release build."""
    p = Path(os.environ.get("TF_BIN", ROOT / "build" / "release" / "bin" / "tensorfold"))
    return p if p.is_absolute() else ROOT / p


class Server:
    """A running `tensorfold serve`; `url` is the OpenAI base URL (http://127.0.0.1:PORT/v1)."""

    def __init__(self, extra_args=(), env=None, model=None):
        defaults = {"--host": "127.0.0.1", "--port": "0", "--name": MODEL_NAME,
                    "--alias": "smol", "--kv-gib": "0.25", "--context": "2048",
                    "--parallel": "8", "--max-body-mib": "1"}
        extra_args = list(extra_args)
        for flag in extra_args:  # a flag given in extra_args replaces its default
            defaults.pop(flag, None)
        self.args = [str(binary()), "serve", str(model or MODEL),
                     *[x for kv in defaults.items() for x in kv], *extra_args]
        full_env = dict(os.environ)
        full_env.pop("TENSORFOLD_API_KEY", None)
        full_env.update(env or {})
        # Output goes to a file, never a pipe nobody drains (a full pipe would stall the server).
        self.log = tempfile.NamedTemporaryFile(prefix="tensorfold-serve-", suffix=".log")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=full_env)
        self.startup_line = self._read_startup_line(timeout=90)
        m = re.search(r"http://([\d.]+):(\d+)/v1", self.startup_line)
        assert m, f"no URL in the startup line: {self.startup_line!r}"
        self.host, self.port = m.group(1), int(m.group(2))
        self.url = f"http://{self.host}:{self.port}/v1"
        blocks = re.search(r"\((\d+) blocks\)", self.startup_line)
        self.kv_blocks = int(blocks.group(1)) if blocks else None
        self._wait_healthy(timeout=30)

    def output(self):
        with open(self.log.name, "rb") as f:
            return f.read().decode(errors="replace")

    def _read_startup_line(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.output().splitlines():
                if "serving" in line and "http://" in line:
                    return line
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited ({self.proc.returncode}) before serving: "
                                   f"{self.output()[-2000:]}")
            time.sleep(0.05)
        self.proc.kill()
        raise RuntimeError(f"no startup line within {timeout}s: {self.output()[-2000:]}")

    def _wait_healthy(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                status, _ = self.request("GET", "/health")
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server never answered /health")

    def request(self, method, path, body=None, headers=None, timeout=60):
        """One raw HTTP request; returns (status, parsed JSON or raw bytes)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            h = {"Content-Type": "application/json"}
            h.update(headers or {})
            conn.request(method, path, body=body, headers=h)
            resp = conn.getresponse()
            data = resp.read()
            try:
                return resp.status, json.loads(data)
            except ValueError:
                return resp.status, data
        finally:
            conn.close()

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=30):
        """SIGTERM, then the exit status (the server must exit 0)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        self.log.close()
        return self.proc.returncode


def _require_binary_and_model():
    if not binary().exists():
        pytest.skip(f"tensorfold binary not found at {binary()} (build it, or set TF_BIN)")
    if not MODEL.exists():
        pytest.skip(f"default model missing: {MODEL} (run scripts/setup)")


@pytest.fixture(scope="session")
def server():
    """The shared server for the whole session; stopped with SIGTERM, checking it exits 0."""
    _require_binary_and_model()
    s = Server()
    yield s
    assert s.alive(), "the server died during the tests"
    assert s.stop() == 0


@pytest.fixture(scope="session")
def client(server):
    """An openai SDK client pointed at the shared server."""
    import openai
    return openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=120)
