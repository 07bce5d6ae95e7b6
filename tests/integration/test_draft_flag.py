"""`"draft": false` (the serial path, no speculative drafts) on Responses and Messages, through the
official `openai` and `anthropic` SDKs: a greedy reply that the engine drafted (its
vllm:spec_decode_num_drafts_total counter grew) equals the same request with draft false (the
counter did not grow); a draft that is not a boolean is a 400 naming it."""
import re
import urllib.request

import anthropic
import openai
import pytest

PROMPT = "Repeat this line five times: the cat sat on the mat and the dog sat on the log."


@pytest.fixture(scope="module")
def oc(server):
    return openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def ac(server):
    return anthropic.Anthropic(base_url=f"http://{server.host}:{server.port}", api_key="unused",
                               max_retries=0)


def drafts(server):
    with urllib.request.urlopen(server.url[:-3] + "/metrics") as r:
        text = r.read().decode()
    m = re.search(r"^vllm:spec_decode_num_drafts_total\{[^}]*\} (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def counted(server, call):
    """The call's result and how many drafts the engine made meanwhile (requests run one at a
    time in this module)."""
    before = drafts(server)
    out = call()
    return out, drafts(server) - before


def test_responses_drafted_equals_draft_false(server, oc):
    def run(draft):
        return lambda: oc.responses.create(model="smollm2", input=PROMPT, max_output_tokens=64,
                                           temperature=0, extra_body={"draft": draft})
    plain, n_plain = counted(server, run(False))
    drafted, n_drafted = counted(server, run(True))
    assert n_plain == 0 and n_drafted > 0
    assert drafted.output_text == plain.output_text and plain.output_text
    assert drafted.usage.output_tokens == plain.usage.output_tokens


def test_messages_drafted_equals_draft_false(server, ac):
    def run(draft):
        return lambda: ac.messages.create(model="smollm2", max_tokens=64,
                                          messages=[{"role": "user", "content": PROMPT}],
                                          extra_body={"draft": draft, "temperature": 0})
    plain, n_plain = counted(server, run(False))
    drafted, n_drafted = counted(server, run(True))
    assert n_plain == 0 and n_drafted > 0
    assert [b.text for b in drafted.content] == [b.text for b in plain.content]
    assert drafted.usage.output_tokens == plain.usage.output_tokens
    assert drafted.stop_reason == plain.stop_reason


def test_draft_must_be_a_boolean(oc, ac):
    with pytest.raises(openai.BadRequestError) as e:
        oc.responses.create(model="smollm2", input="Hi", extra_body={"draft": "no"})
    assert e.value.body["param"] == "draft"
    with pytest.raises(anthropic.BadRequestError) as e:
        ac.messages.create(model="smollm2", max_tokens=4, extra_body={"draft": 0},
                           messages=[{"role": "user", "content": "Hi"}])
    assert e.value.body["error"]["type"] == "invalid_request_error"
    assert "draft" in e.value.body["error"]["message"]
