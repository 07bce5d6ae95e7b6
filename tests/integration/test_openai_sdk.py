"""Chat Completions and Completions through the official openai SDK against the real server."""
import asyncio
import time

import pytest

from conftest import MODEL_NAME

MSG = [{"role": "user", "content": "Name three colors."}]


def test_models_lists_the_served_model(client):
    ids = [m.id for m in client.models.list().data]
    assert MODEL_NAME in ids and "smol" in ids


def test_chat_not_streamed(client):
    r = client.chat.completions.create(model=MODEL_NAME, messages=MSG, max_tokens=8,
                                       temperature=0)
    assert r.id.startswith("chatcmpl-")
    assert r.object == "chat.completion"
    assert abs(r.created - time.time()) < 60
    assert r.model == MODEL_NAME
    assert r.system_fingerprint
    assert len(r.choices) == 1
    c = r.choices[0]
    assert c.index == 0 and c.message.role == "assistant"
    assert isinstance(c.message.content, str) and c.message.content
    assert c.finish_reason in ("stop", "length")
    u = r.usage
    assert u.prompt_tokens > 5 and 0 < u.completion_tokens <= 8
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens
    assert u.prompt_tokens_details.cached_tokens >= 0


def test_chat_length_finish(client):
    r = client.chat.completions.create(model=MODEL_NAME, messages=MSG, max_completion_tokens=3,
                                       temperature=0)
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 3


def test_chat_streamed_with_usage(client):
    chunks = list(client.chat.completions.create(
        model=MODEL_NAME, messages=MSG, max_tokens=8, temperature=0, stream=True,
        stream_options={"include_usage": True}))
    assert len({c.id for c in chunks}) == 1
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    usage_chunk = chunks[-1]
    assert usage_chunk.choices == [] and usage_chunk.usage.completion_tokens > 0
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finals) == 1 and finals[0].choices[0].finish_reason in ("stop", "length")
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    plain = client.chat.completions.create(model=MODEL_NAME, messages=MSG, max_tokens=8,
                                           temperature=0)
    assert text == plain.choices[0].message.content
    assert usage_chunk.usage.completion_tokens == plain.usage.completion_tokens


def test_completions_not_streamed_and_streamed(client):
    r = client.completions.create(model=MODEL_NAME, prompt="The capital of France is",
                                  max_tokens=6, temperature=0)
    assert r.object == "text_completion" and r.id.startswith("cmpl-")
    assert r.choices[0].text and r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens <= 6
    chunks = list(client.completions.create(model=MODEL_NAME, prompt="The capital of France is",
                                            max_tokens=6, temperature=0, stream=True))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == r.choices[0].text


def test_completions_token_prompt_echo_logprobs(client):
    r = client.completions.create(model=MODEL_NAME, prompt=[504, 3458, 282], max_tokens=3,
                                  temperature=0, echo=True, logprobs=2)
    lp = r.choices[0].logprobs
    # The 3 prompt tokens (the first unscored) and the 3 generated ones.
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 6
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert all(1 <= len(t) <= 2 for t in lp.top_logprobs[1:])


def test_chat_logprobs(client):
    r = client.chat.completions.create(model=MODEL_NAME, messages=MSG, max_tokens=4,
                                       temperature=0, logprobs=True, top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    for e in content:
        assert e.logprob <= 0 and len(e.top_logprobs) == 3 and e.bytes is not None
    # Greedy: the chosen token is the most likely one.
    assert content[0].logprob == pytest.approx(content[0].top_logprobs[0].logprob, abs=1e-4)


def test_stop_strings_are_never_emitted(client):
    base = client.completions.create(model=MODEL_NAME, prompt="1, 2, 3, 4,", max_tokens=16,
                                     temperature=0).choices[0].text
    assert len(base) > 4
    stop = base[2:4]  # a string that does occur, likely inside a token
    r = client.completions.create(model=MODEL_NAME, prompt="1, 2, 3, 4,", max_tokens=16,
                                  temperature=0, stop=[stop, "zzzz"])
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].text == base[:base.index(stop)]
    chunks = client.completions.create(model=MODEL_NAME, prompt="1, 2, 3, 4,", max_tokens=16,
                                       temperature=0, stop=stop, stream=True)
    assert "".join(c.choices[0].text for c in chunks) == base[:base.index(stop)]


def test_seed_reproducibility(client):
    def ask(seed):
        return client.chat.completions.create(model=MODEL_NAME, messages=MSG, max_tokens=12,
                                              temperature=1.0, seed=seed).choices[0].message.content
    a, b = ask(1234), ask(1234)
    assert a == b
    others = {ask(s) for s in (1, 2, 3)}
    assert len(others | {a}) > 1, "different seeds should not all give the same sampled text"


def _prompts():
    return [(f"Tell me about the number {i}.", 100 + i) for i in range(6)]


def test_concurrent_requests_do_not_change_replies(server, client):
    import openai

    sequential = [client.chat.completions.create(
        model=MODEL_NAME, messages=[{"role": "user", "content": p}], max_tokens=10,
        temperature=0.8, seed=seed).choices[0].message.content for p, seed in _prompts()]

    async def together():
        async with openai.AsyncOpenAI(base_url=server.url, api_key="x", max_retries=0,
                                      timeout=180) as c:
            rs = await asyncio.gather(*[c.chat.completions.create(
                model=MODEL_NAME, messages=[{"role": "user", "content": p}], max_tokens=10,
                temperature=0.8, seed=seed) for p, seed in _prompts()])
        return [r.choices[0].message.content for r in rs]

    assert asyncio.run(together()) == sequential


def test_32_concurrent_streaming_clients(server):
    import openai

    async def one(c, i):
        text, finish = "", None
        stream = await c.chat.completions.create(
            model=MODEL_NAME, messages=[{"role": "user", "content": f"Count to {i}."}],
            max_tokens=6, temperature=0, stream=True)
        async for chunk in stream:
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
                finish = chunk.choices[0].finish_reason or finish
        return text, finish

    async def run():
        c = openai.AsyncOpenAI(base_url=server.url, api_key="x", max_retries=0, timeout=180)
        try:
            return await asyncio.gather(*[one(c, i) for i in range(32)])
        finally:
            await c.close()

    results = asyncio.run(run())
    assert len(results) == 32
    assert all(finish in ("stop", "length") for _, finish in results)
    assert all(text for text, _ in results)
