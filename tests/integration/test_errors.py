"""Errors surface as the openai SDK's exception types, in OpenAI's envelope."""
import openai
import pytest

from conftest import MODEL_NAME, Server, _require_binary_and_model

MSG = [{"role": "user", "content": "Hi"}]


def test_unknown_model_is_not_found(client):
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="gpt-17", messages=MSG, max_tokens=2)
    assert e.value.code == "model_not_found"
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="gpt-17", prompt="x", max_tokens=2)


@pytest.mark.parametrize("kwargs,param", [
    ({"temperature": 5}, "temperature"),
    ({"top_p": -1}, "top_p"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"n": 2}, "n"),
    ({"logprobs": False, "top_logprobs": 3}, "top_logprobs"),
    ({"stop": ["a"] * 17}, "stop"),
    ({"extra_body": {"top_k": "many"}}, "top_k"),
    ({"extra_body": {"seed": "x"}}, "seed"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0]"),
])
def test_bad_fields_are_bad_requests_naming_param(client, kwargs, param):
    args = {"model": MODEL_NAME, "messages": MSG, "max_tokens": 2, **kwargs}
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(**args)
    assert e.value.param == param
    assert e.value.body["type"] == "invalid_request_error"


def test_context_length_exceeded(client, server):
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=MODEL_NAME, prompt="hello " * 3000, max_tokens=2)
    assert e.value.code == "context_length_exceeded"
    assert "2048" in e.value.message


def test_api_key_required():
    _require_binary_and_model()
    s = Server(["--api-key", "sekrit"])
    try:
        bad = openai.OpenAI(base_url=s.url, api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            bad.chat.completions.create(model=MODEL_NAME, messages=MSG, max_tokens=2)
        with pytest.raises(openai.AuthenticationError):
            bad.models.list()
        status, body = s.request("GET", "/v1/models")
        assert status == 401 and body["error"]["type"] == "authentication_error"
        status, _ = s.request("GET", "/v1/models", headers={"x-api-key": "sekrit"})
        assert status == 200
        assert s.request("GET", "/health")[0] == 200  # health stays open
        good = openai.OpenAI(base_url=s.url, api_key="sekrit", max_retries=0)
        r = good.chat.completions.create(model=MODEL_NAME, messages=MSG, max_tokens=2)
        assert r.choices[0].message.content is not None
    finally:
        assert s.stop() == 0


def test_api_key_from_environment():
    _require_binary_and_model()
    s = Server(env={"TENSORFOLD_API_KEY": "envkey"})
    try:
        assert s.request("GET", "/v1/models")[0] == 401
        assert s.request("GET", "/v1/models",
                         headers={"Authorization": "Bearer envkey"})[0] == 200
    finally:
        assert s.stop() == 0
