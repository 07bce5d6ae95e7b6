"""`--draft-model`: a draft model with the served model's tokenizer (here a second copy of the
served model) drafts its greedy continuation; through the official `openai` SDK a greedy reply
equals the same request with `"draft": false`, and the drafts were made and kept (the engine's
counters on /metrics). A draft model with another tokenizer is refused at start-up, by name."""
import re
import urllib.request
from pathlib import Path

import openai
import pytest

from conftest import MODEL, Server

ROOT = Path(__file__).resolve().parents[2]
OTHER_TOKENIZER = ROOT.parent / "shared" / "models" / "stories260K.gguf"
PROMPT = "Count from one to twenty in words, separated by commas."


def counter(server, name):
    with urllib.request.urlopen(server.url[:-3] + "/metrics") as r:
        text = r.read().decode()
    m = re.search(rf"^{name}\{{[^}}]*\}} (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


@pytest.fixture(scope="module")
def drafted():
    # A fixed depth: whether drafting pays depends on the machine's measured verify cost, and
    # this test is about exactness and the counters, on every machine.
    s = Server(["--draft-model", str(MODEL), "--draft-kv-gib", "0.1", "--parallel", "2",
                "--draft-depth", "4"])
    yield s
    s.stop()


def reply(server, **extra):
    client = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0)
    r = client.chat.completions.create(model="smol", messages=[{"role": "user", "content": PROMPT}],
                                       max_tokens=40, temperature=0, extra_body=extra)
    return r.choices[0].message.content, r.usage


def test_draft_model_replies_equal_serial_ones(drafted):
    before = counter(drafted, "vllm:spec_decode_num_draft_tokens_total")
    serial, _ = reply(drafted, draft=False)
    assert counter(drafted, "vllm:spec_decode_num_draft_tokens_total") == before
    text, usage = reply(drafted)
    assert text == serial
    drafts = counter(drafted, "vllm:spec_decode_num_draft_tokens_total") - before
    accepted = counter(drafted, "vllm:spec_decode_num_accepted_tokens_total")
    assert drafts > 0
    # The same model drafts what it would pick: every draft is kept.
    assert accepted == drafts
    assert usage.completion_tokens_details.accepted_prediction_tokens == accepted


def test_a_draft_model_with_another_tokenizer_is_refused():
    if not OTHER_TOKENIZER.exists():
        pytest.skip("missing ../shared/models/stories260K.gguf (see DATA.md)")
    with pytest.raises(RuntimeError, match=r"--draft-model .*tokenizer differs"):
        Server(["--draft-model", str(OTHER_TOKENIZER)])
