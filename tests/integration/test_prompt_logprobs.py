"""Completions' echo + logprobs (the prompt's tokens scored too, the first null, as OpenAI's legacy
API gives them), vLLM's prompt_logprobs, and max_tokens 0 with echo, through the official `openai`
SDK against the real server and model; the prompt's logprobs are checked against the logprobs the
same tokens get when the server generates them greedily."""
import json
import math
import urllib.request

import openai
import pytest

from conftest import Server


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url, api_key="none")


def post(server, body):
    req = urllib.request.Request(server.url + "/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def test_echo_logprobs_score_the_prompt_as_a_greedy_run_does(client):
    prompt = "The capital of France is"
    gen = client.completions.create(model="smollm2", prompt=prompt, max_tokens=6, temperature=0,
                                    logprobs=1)
    cont = gen.choices[0].text
    scored = client.completions.create(model="smollm2", prompt=prompt + cont, max_tokens=0,
                                       echo=True, logprobs=1, temperature=0)
    lp = scored.choices[0].logprobs
    assert scored.choices[0].text == prompt + cont
    n = len(lp.tokens)
    assert len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == n
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert lp.text_offset == sorted(lp.text_offset)
    assert "".join(lp.tokens) == prompt + cont
    # The generated tokens, scored as prompt tokens, have the logprobs they were drawn with.
    g = gen.choices[0].logprobs
    assert lp.tokens[-len(g.tokens):] == g.tokens
    for a, b in zip(lp.token_logprobs[-len(g.tokens):], g.token_logprobs):
        assert a == pytest.approx(b, abs=2e-3)
    for tok, val, top in zip(lp.tokens[1:], lp.token_logprobs[1:], lp.top_logprobs[1:]):
        assert val <= 0 and len(top) >= 1 and max(top.values()) >= val - 1e-6


def test_lm_eval_loglikelihood_request(server):
    """lm-evaluation-harness local-completions' loglikelihood body, parsed as it parses it."""
    tok = urllib.request.Request(server.url + "/tokenize",
                                 data=json.dumps({"prompt": "One, two, three"}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(tok) as r:
        ids = json.loads(r.read())["tokens"]
    ctxlen = len(ids) - 2
    out = post(server, {"model": "smollm2", "prompt": [ids], "temperature": 0, "max_tokens": 1,
                        "logprobs": 1, "seed": 1234, "echo": True})
    choice = sorted(out["choices"], key=lambda c: c["index"])[0]
    lps = choice["logprobs"]["token_logprobs"]
    assert len(lps) == len(ids) + 1  # the prompt's, then the one generated token's
    cont = lps[ctxlen:-1]
    assert len(cont) == 2 and all(isinstance(x, float) and x <= 0 for x in cont)
    tops = choice["logprobs"]["top_logprobs"][ctxlen:-1]
    is_greedy = all(t == max(top.values()) for t, top in zip(cont, tops))
    assert isinstance(is_greedy, bool) and math.isfinite(sum(cont))


def check_vllm_entry(entry, k):
    """One prompt position of vLLM's prompt_logprobs: the token first, then its top k, each a
    Logprob {logprob, rank, decoded_token}; the top k ranked 1..k by falling logprob, the token
    ranked where it stands among them (null outside them)."""
    items = list(entry.items())
    for _, v in items:
        assert list(v) == ["logprob", "rank", "decoded_token"] and v["logprob"] <= 0
    token_id, own = items[0]
    by_rank = sorted((v for _, v in items if v["rank"] is not None), key=lambda v: v["rank"])
    assert [v["rank"] for v in by_rank] == list(range(1, len(by_rank) + 1)) and len(by_rank) == k
    assert [v["logprob"] for v in by_rank] == sorted((v["logprob"] for v in by_rank), reverse=True)
    if own["rank"] is None:
        assert len(items) == k + 1 and own["logprob"] <= by_rank[-1]["logprob"] + 1e-6


def test_vllm_prompt_logprobs(server):
    out = post(server, {"model": "smollm2", "prompt": "Hello there, friend", "max_tokens": 0,
                        "prompt_logprobs": 2})
    plp = out["choices"][0]["prompt_logprobs"]
    echo = post(server, {"model": "smollm2", "prompt": "Hello there, friend", "max_tokens": 0,
                         "echo": True, "logprobs": 0})
    lps = echo["choices"][0]["logprobs"]["token_logprobs"]
    assert plp[0] is None and len(plp) == len(lps)
    for entry, want in zip(plp[1:], lps[1:]):
        assert 1 <= len(entry) <= 3
        assert any(v["logprob"] == pytest.approx(want, abs=1e-5) for v in entry.values())
        check_vllm_entry(entry, 2)
    assert out["choices"][0]["text"] == "" and out["usage"]["completion_tokens"] == 0


def joined_stream(chunks):
    """A streamed completion's pieces joined: text, the legacy logprobs arrays, finish_reason."""
    text, finish = "", None
    lp = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
    for c in chunks:
        ch = c.choices[0]
        text += ch.text
        finish = ch.finish_reason or finish
        if ch.logprobs is not None:
            for k in lp:
                lp[k] += getattr(ch.logprobs, k)
    return text, lp, finish


@pytest.mark.parametrize("max_tokens", [8, 0])
def test_streamed_echo_logprobs_join_into_the_whole_reply(client, max_tokens):
    kwargs = dict(model="smollm2", prompt="The three primary colours are", max_tokens=max_tokens,
                  temperature=0, echo=True, logprobs=2)
    whole = client.completions.create(**kwargs)
    chunks = list(client.completions.create(stream=True, **kwargs))
    text, lp, finish = joined_stream(chunks)
    assert text == whole.choices[0].text
    assert finish == whole.choices[0].finish_reason
    want = whole.choices[0].logprobs
    assert lp["tokens"] == want.tokens and lp["text_offset"] == want.text_offset
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
    assert lp["token_logprobs"][1:] == pytest.approx(want.token_logprobs[1:], abs=1e-5)
    for got, exp in zip(lp["top_logprobs"][1:], want.top_logprobs[1:]):
        assert got.keys() == exp.keys()
        assert list(got.values()) == pytest.approx(list(exp.values()), abs=1e-5)
    # The first chunk is the echo: the prompt's text with the prompt's entries, the first null.
    first = chunks[0].choices[0]
    assert first.text == kwargs["prompt"] and first.logprobs.token_logprobs[0] is None
    assert "".join(first.logprobs.tokens) == kwargs["prompt"]
    assert len(chunks) >= (2 if max_tokens == 0 else 3)


def test_refusals_name_the_field(client):
    for kwargs, field in [({"max_tokens": 0}, "max_tokens"),
                          ({"extra_body": {"prompt_logprobs": 1}, "stream": True},
                           "prompt_logprobs"),
                          ({"extra_body": {"prompt_logprobs": 0}, "stream": True},
                           "prompt_logprobs")]:
        with pytest.raises(openai.BadRequestError) as e:
            r = client.completions.create(model="smollm2", prompt="Hi", **kwargs)
            list(r)
        assert e.value.body["param"] == field


def test_chat_prompt_logprobs_equal_completions_on_the_rendered_prompt(server, client):
    """Chat Completions returns them at the top level, as vLLM does: the same entries Completions
    gives for the chat's rendered prompt ids."""
    messages = [{"role": "user", "content": "Name a colour."}]
    status, t = server.request("POST", "/tokenize", {"model": "smollm2", "messages": messages})
    assert status == 200
    r = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=3,
                                       temperature=0, extra_body={"prompt_logprobs": 1})
    plp = r.model_extra["prompt_logprobs"]
    want = post(server, {"model": "smollm2", "prompt": [t["tokens"]], "max_tokens": 0,
                         "prompt_logprobs": 1})["choices"][0]["prompt_logprobs"]
    assert plp[0] is None and len(plp) == len(want) == r.usage.prompt_tokens
    for got, exp in zip(plp[1:], want[1:]):
        check_vllm_entry(got, 1)
        assert got.keys() == exp.keys()
        for k in got:
            assert got[k]["logprob"] == pytest.approx(exp[k]["logprob"], abs=1e-5)
            assert got[k]["decoded_token"] == exp[k]["decoded_token"]
    plain = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=3,
                                           temperature=0)
    assert "prompt_logprobs" not in (plain.model_extra or {})
    assert plain.choices[0].message.content == r.choices[0].message.content


def test_chat_prompt_logprobs_refused_when_streamed(client):
    with pytest.raises(openai.BadRequestError) as e:
        list(client.chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": "Hi"}], stream=True,
            extra_body={"prompt_logprobs": 1}))
    assert e.value.body["param"] == "prompt_logprobs"
