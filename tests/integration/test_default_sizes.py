"""The engine's sizes left to the backend (`--parallel 0 --kv-gib 0 --max-batch-tokens 0`, what
no flag gives): on the CPU the banner shows a 1 GiB pool and 16 streams, and the server serves
16 requests at once with the replies each gives alone."""
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import Server, _require_binary_and_model


@pytest.fixture(scope="module")
def sized():
    _require_binary_and_model()
    s = Server(["--parallel", "0", "--kv-gib", "0", "--max-batch-tokens", "0"])
    yield s
    assert s.stop() == 0


def complete(server, prompt):
    status, body = server.request("POST", "/v1/completions",
                                  {"model": "smollm2", "prompt": prompt, "max_tokens": 12,
                                   "temperature": 0, "ignore_eos": True})
    assert status == 200, body
    return body["choices"][0]["text"]


def test_cpu_sizes_in_the_banner(sized):
    line = sized.startup_line
    assert "backend cpu" in line, line
    pool = re.search(r"KV pool (\d+) MiB \((\d+) blocks\) \| (\d+) streams", line)
    assert pool, line
    # 1 GiB of f32 blocks, rounded down to whole blocks.
    assert 1000 <= int(pool.group(1)) <= 1024, line
    assert int(pool.group(3)) == 16, line


def test_sixteen_at_once_reply_as_alone(sized):
    prompts = [f"Count from {i} to {i + 5}:" for i in range(16)]
    alone = [complete(sized, p) for p in prompts]
    with ThreadPoolExecutor(16) as pool:
        together = list(pool.map(lambda p: complete(sized, p), prompts))
    assert together == alone
