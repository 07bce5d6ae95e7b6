"""The prompt cache's disk tier through the real binary: a conversation resumed after a restart
replies exactly (text and logprobs) as a fresh server computes it, and damaged cache files cost
nothing but the resume."""
import os
import tempfile
from pathlib import Path

import pytest

from conftest import Server, _require_binary_and_model

SYSTEM = "You are a helpful assistant who answers in full sentences. " * 8


def chat(server, messages, max_tokens=12):
    status, body = server.request("POST", "/v1/chat/completions", {
        "model": "smol", "messages": messages, "max_tokens": max_tokens, "temperature": 0,
        "logprobs": True, "top_logprobs": 3})
    assert status == 200, body
    choice = body["choices"][0]
    lps = [(t["token"], t["logprob"]) for t in choice["logprobs"]["content"]]
    details = body["usage"].get("prompt_tokens_details") or {}
    return choice["message"]["content"], lps, details.get("cached_tokens", 0), body["usage"]


def conversation(reply):
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Name three rivers in Europe."},
            {"role": "assistant", "content": reply},
            {"role": "user", "content": "Which of them is the longest?"}]


@pytest.fixture(scope="module")
def cache_dir():
    _require_binary_and_model()
    with tempfile.TemporaryDirectory() as d:
        yield Path(d) / "kv"


def test_resume_after_restart_is_exact(cache_dir):
    first = [{"role": "system", "content": SYSTEM},
             {"role": "user", "content": "Name three rivers in Europe."}]
    fresh = Server(extra_args=["--prompt-cache-gib", "0"])
    try:
        reply = chat(fresh, first)[0]
    finally:
        assert fresh.stop() == 0
    # The reference: a server that never saw the conversation.
    ref = Server(extra_args=["--prompt-cache-gib", "0"])
    try:
        want_text, want_lps, cached, _ = chat(ref, conversation(reply))
        assert cached == 0
    finally:
        assert ref.stop() == 0

    args = ["--prompt-cache-gib", "0", "--prompt-cache-dir", str(cache_dir)]
    s = Server(extra_args=args)
    try:
        assert chat(s, first)[0] == reply
    finally:
        assert s.stop() == 0
    assert oct(os.stat(cache_dir).st_mode & 0o777) == "0o700"
    files = list(cache_dir.iterdir())
    assert files and all(oct(f.stat().st_mode & 0o777) == "0o600" for f in files)

    s = Server(extra_args=args)  # a restart: only the disk holds the conversation
    try:
        text, lps, cached, usage = chat(s, conversation(reply))
        assert cached >= 32 and cached % 16 == 0 and cached < usage["prompt_tokens"]
        assert text == want_text
        assert lps == want_lps  # bit-identical logprobs, as JSON carries them
    finally:
        assert s.stop() == 0

    # Damage every file: the restart still answers, from scratch, with the same reply.
    for f in cache_dir.iterdir():
        data = bytearray(f.read_bytes())
        data[-20] ^= 0x10
        f.write_bytes(data)
    s = Server(extra_args=args)
    try:
        text, lps, cached, _ = chat(s, conversation(reply))
        assert cached == 0
        assert (text, lps) == (want_text, want_lps)
    finally:
        assert s.stop() == 0


def test_unsafe_cache_dir_is_refused(cache_dir):
    d = cache_dir.parent / "open"
    d.mkdir()
    d.chmod(0o777)
    with pytest.raises(RuntimeError, match="writable by others"):
        Server(extra_args=["--prompt-cache-dir", str(d)])
