"""The next turn, prepared, against a tiny Qwen3 with the real Qwen3 template, which drops earlier
turns' reasoning: after a reply with a think block, the follow-up's cached_tokens reaches the end
of that reply as the template renders it, on Chat Completions, Responses (previous_response_id)
and Messages, each through its official SDK; with --prefill-next-turn off it stops where the
reasoning was, and the follow-up's reply is the same either way."""
import time

import anthropic
import openai
import pytest

from conftest import Server, binary
from tiny_qwen3 import TOKENIZER, write_checkpoint

NAME = "tiny-qwen3"
THINK = 151667  # <think>
IM_START = 151644
BLOCK = 16  # KV block size: a prefix resumes at whole blocks
FIRST = [{"role": "user", "content": "Plan a three-day trip to Lisbon."}]
FOLLOW_UP = {"role": "user", "content": "And what should I pack?"}
# A think block of 6 tokens (forced open, closed by the engine), then 40 tokens of JSON (the
# grammar keeps the forced <think> out of it).
THINKING = dict(max_tokens=48, seed=7, temperature=1.0, logit_bias={str(THINK): 100},
                response_format={"type": "json_object"})
EXTRA = {"max_thinking_tokens": 6, "ignore_eos": True}


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    if not binary().exists() or not (TOKENIZER / "tokenizer.json").exists():
        pytest.skip("needs the tensorfold binary and ../shared/tokenizers/qwen3")
    return write_checkpoint(tmp_path_factory.mktemp("tiny-qwen3"))


def start(model, *extra):
    return Server(["--name", NAME, "--context", "4096", *extra], model=model)


@pytest.fixture(scope="module")
def on(model):
    s = start(model)  # the default is on
    yield s
    assert s.stop() == 0


@pytest.fixture(scope="module")
def off(model):
    s = start(model, "--prefill-next-turn", "off")
    yield s
    assert s.stop() == 0


def sdk(s):
    return openai.OpenAI(base_url=s.url, api_key="unused", max_retries=0, timeout=120)


def wait_prepared(s, done):
    """Waits until the server has prepared `done` next turns and holds none."""
    for _ in range(600):
        _, st = s.request("GET", "/stats")
        if st["background"]["done"] >= done and st["background"]["held"] == 0:
            return
        time.sleep(0.05)
    raise AssertionError(f"no next turn prepared: {st['background']}")


def prepared_turns(s):
    return s.request("GET", "/stats")[1]["background"]["done"]


def history_end(s, messages):
    """The follow-up prompt's length up to the end of the reply as the template renders it: the
    position of the new user message's <|im_start|> (the last one opens the generation)."""
    status, t = s.request("POST", "/tokenize", {"model": NAME, "messages": messages})
    assert status == 200, t
    starts = [i for i, t in enumerate(t["tokens"]) if t == IM_START]
    return starts[-2]


def first_turn(s):
    r = sdk(s).chat.completions.create(model=NAME, messages=FIRST, extra_body=EXTRA, **THINKING)
    m = r.choices[0].message
    assert m.model_extra.get("reasoning_content"), m  # the template will drop it
    assert r.usage.completion_tokens_details.reasoning_tokens == 8
    return r, m.content


def follow_up(s, content):
    messages = FIRST + [{"role": "assistant", "content": content}, FOLLOW_UP]
    r = sdk(s).chat.completions.create(model=NAME, messages=messages, max_tokens=8, seed=1,
                                       extra_body={"ignore_eos": True})
    return r, history_end(s, messages)


def test_chat_follow_up_resumes_at_the_end_of_the_reply(on, off):
    before = prepared_turns(on)
    first, content = first_turn(on)
    wait_prepared(on, before + 1)
    r, end = follow_up(on, content)
    asked = first.usage.prompt_tokens  # where the dropped reasoning began
    assert end - asked >= 2 * BLOCK, "the reply is too short to tell the cases apart"
    assert r.usage.prompt_tokens_details.cached_tokens >= end // BLOCK * BLOCK > asked

    first_off, content_off = first_turn(off)
    assert content_off == content
    r_off, _ = follow_up(off, content_off)
    assert r_off.usage.prompt_tokens_details.cached_tokens <= asked
    assert r_off.choices[0].message.content == r.choices[0].message.content


def test_responses_follow_up_resumes_at_the_end_of_the_reply(on):
    oc = sdk(on)
    before = prepared_turns(on)
    first = oc.responses.create(model=NAME, input=FIRST[0]["content"], max_output_tokens=60,
                                temperature=1.0, extra_body={"seed": 11})
    wait_prepared(on, before + 1)
    r = oc.responses.create(model=NAME, previous_response_id=first.id,
                            input=FOLLOW_UP["content"], max_output_tokens=4)
    end = history_end(on, FIRST + [{"role": "assistant", "content": first.output_text},
                                   FOLLOW_UP])
    assert end // BLOCK * BLOCK > first.usage.input_tokens, first.output_text
    assert r.usage.input_tokens_details.cached_tokens >= end // BLOCK * BLOCK


def test_messages_follow_up_resumes_at_the_end_of_the_reply(on):
    """A random model's reply is rarely the tokenizer's own split of its text, so without the
    prepared turn the follow-up would leave the cache early in the reply."""
    ac = anthropic.Anthropic(base_url=f"http://{on.host}:{on.port}", api_key="unused",
                             max_retries=0)
    before = prepared_turns(on)
    first = ac.messages.create(model=NAME, messages=FIRST, max_tokens=60,
                               extra_body={"seed": 13, "temperature": 1.0})
    wait_prepared(on, before + 1)
    sent_back = [b.model_dump(exclude_none=True) for b in first.content]
    r = ac.messages.create(model=NAME, max_tokens=4,
                           messages=FIRST + [{"role": "assistant", "content": sent_back},
                                             FOLLOW_UP])
    text = "".join(b.text for b in first.content if b.type == "text")
    end = history_end(on, FIRST + [{"role": "assistant", "content": text}, FOLLOW_UP])
    asked = first.usage.input_tokens + first.usage.cache_read_input_tokens
    assert end // BLOCK * BLOCK > asked, text
    assert r.usage.cache_read_input_tokens >= end // BLOCK * BLOCK
