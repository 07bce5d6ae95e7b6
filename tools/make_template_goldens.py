#!/usr/bin/env python3
"""Makes tests/fixtures/chat/goldens.json: expected chat-template renders from Python jinja2.

jinja2 is called the way transformers' apply_chat_template calls it (ImmutableSandboxedEnvironment
with trim_blocks, lstrip_blocks and loopcontrols; its tojson filter; raise_exception and
strftime_now globals), over every template in ../shared/templates, SmolLM2's GGUF template and
the Qwen3 / Llama 3 tokenizer_config.json templates, for each scenario below. strftime_now reads a
fixed clock (FIXED_NOW) so the goldens are deterministic; the C++ test injects the same time.

Run from the repository root:  python3 tools/make_template_goldens.py
"""
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared")
OUT_DIR = os.path.join(ROOT, "tests", "fixtures", "chat")
FIXED_NOW = datetime.datetime(2026, 1, 15, 10, 30, 0)

# SmolLM2-135M-Instruct's GGUF `tokenizer.chat_template`.
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
    "<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}"
)

# Special tokens per template family (what each model's tokenizer_config.json would supply).
TOKENS = {
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use": ("<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": ("<|begin_of_text|>", "<|im_end|>"),
    "Qwen-Qwen2.5-7B-Instruct": (None, "<|im_end|>"),
    "Qwen-Qwen3": (None, "<|im_end|>"),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "google-gemma-2-2b-it": ("<bos>", "<eos>"),
    "meetkai-functionary-medium-v3.2": ("<|begin_of_text|>", "<|eot_id|>"),
    "meta-llama-Llama-3.1-8B-Instruct": ("<|begin_of_text|>", "<|eot_id|>"),
    "meta-llama-Llama-3.2-3B-Instruct": ("<|begin_of_text|>", "<|eot_id|>"),
    "meta-llama-Meta-Llama-3-8B-Instruct": ("<|begin_of_text|>", "<|eot_id|>"),
    "microsoft-Phi-3.5-mini-instruct": ("<s>", "<|endoftext|>"),
    "mistralai-Mistral-Nemo-Instruct-2407": ("<s>", "</s>"),
    "smollm2-gguf": ("<|im_start|>", "<|im_end|>"),
}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Paris"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer", "description": "Forecast days", "default": 1},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "max_results": {"type": "number", "description": "At most this many", "default": 2.5},
                    "safe": {"type": "boolean"},
                },
                "required": ["query"],
            },
        },
    },
]

CALL = {
    "id": "abc123XYZ",
    "type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius", "days": 2}},
}
CALL2 = {
    "id": "def456UVW",
    "type": "function",
    "function": {"name": "search", "arguments": {"query": "Eiffel tower height", "max_results": 1.5}},
}


def long_conversation():
    msgs = [{"role": "system", "content": "You are terse."}]
    for i in range(30):
        msgs.append({"role": "user", "content": f"Question {i}: what is {i} * {i}?"})
        msgs.append({"role": "assistant", "content": f"{i * i}"})
    msgs.append({"role": "user", "content": "Thanks, that is all."})
    return msgs


SCENARIOS = [
    {"name": "plain", "messages": [{"role": "user", "content": "Hello!"}]},
    {"name": "system_prompt", "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is 2+2?"}]},
    {"name": "multi_turn", "messages": [
        {"role": "system", "content": "Be concise."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke.\nMake it short."}]},
    {"name": "tool_definitions", "tools": TOOLS, "messages": [
        {"role": "user", "content": "What's the weather in Paris?"}]},
    {"name": "tool_definitions_system", "tools": TOOLS, "messages": [
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "Search for cats."}]},
    {"name": "assistant_tool_calls", "tools": TOOLS, "add_generation_prompt": False, "messages": [
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]}]},
    {"name": "tool_results", "tools": TOOLS, "messages": [
        {"role": "user", "content": "Weather in Paris, and how tall is the Eiffel tower?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL, CALL2]},
        {"role": "tool", "tool_call_id": "abc123XYZ", "name": "get_weather",
         "content": "{\"temperature\": 18, \"condition\": \"sunny\"}"},
        {"role": "tool", "tool_call_id": "def456UVW", "name": "search",
         "content": "330 m"}]},
    {"name": "tool_round_trip", "tools": TOOLS, "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "abc123XYZ", "name": "get_weather", "content": "18C"},
        {"role": "assistant", "content": "It is 18C and sunny in Paris."},
        {"role": "user", "content": "Thanks!"}]},
    {"name": "thinking_off", "kwargs": {"enable_thinking": False}, "messages": [
        {"role": "user", "content": "Solve x+1=3."}]},
    {"name": "thinking_on", "kwargs": {"enable_thinking": True}, "messages": [
        {"role": "user", "content": "Solve x+1=3."}]},
    {"name": "reasoning_in_history", "messages": [
        {"role": "user", "content": "What is 3*4?"},
        {"role": "assistant", "content": "12", "reasoning_content": "3 times 4 is 12."},
        {"role": "user", "content": "And 5*6?"}]},
    {"name": "think_tags_in_content", "messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "<think>\nThe user greets me.\n</think>\n\nHello there!"},
        {"role": "user", "content": "Bye"}]},
    {"name": "empty_content", "messages": [
        {"role": "user", "content": ""},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "Anything?"}]},
    {"name": "unicode", "messages": [
        {"role": "system", "content": "Réponds en français, s'il te plaît. «Ok»"},
        {"role": "user", "content": "日本語で答えて 👩‍💻🇫🇷 — مرحبا \"quoted\" \\ back\\slash\ttab"}]},
    {"name": "long_conversation", "messages": long_conversation()},
    {"name": "no_generation_prompt", "add_generation_prompt": False, "messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"}]},
    {"name": "content_parts", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Describe this."},
                                     {"type": "text", "text": "Briefly."}]}]},
    {"name": "developer_role", "messages": [
        {"role": "developer", "content": "Answer in one word."},
        {"role": "user", "content": "Color of the sky?"}]},
    {"name": "date_string", "kwargs": {"date_string": "01 Jan 2025"}, "messages": [
        {"role": "user", "content": "What day is it?"}]},
]


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers' override of Jinja's tojson filter
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def raise_exception(message):
    raise TemplateError(message)


def strftime_now(fmt):
    return FIXED_NOW.strftime(fmt)


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def token_text(v):
    if isinstance(v, str):
        return v
    if isinstance(v, dict) and isinstance(v.get("content"), str):
        return v["content"]
    return None


def load_templates():
    templates = []
    tdir = os.path.join(SHARED, "templates")
    for fname in sorted(os.listdir(tdir)):
        if not fname.endswith(".jinja"):
            continue
        name = fname[: -len(".jinja")]
        bos, eos = TOKENS[name]
        with open(os.path.join(tdir, fname), encoding="utf-8") as f:
            source = f.read()
        templates.append({"name": name, "kind": "jinja", "path": "../shared/templates/" + fname,
                          "tokens": {k: v for k, v in (("bos_token", bos), ("eos_token", eos)) if v},
                          "source": source})
    smol_path = os.path.join(OUT_DIR, "smollm2.jinja")
    with open(smol_path, "w", encoding="utf-8") as f:
        f.write(SMOLLM2_TEMPLATE)
    bos, eos = TOKENS["smollm2-gguf"]
    templates.append({"name": "smollm2-gguf", "kind": "jinja",
                      "path": "tests/fixtures/chat/smollm2.jinja",
                      "tokens": {"bos_token": bos, "eos_token": eos}, "source": SMOLLM2_TEMPLATE})
    for tok in ("qwen3", "llama3"):
        rel = f"../shared/tokenizers/{tok}/tokenizer_config.json"
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            cfg = json.load(f)
        tokens = {}
        for k, v in cfg.items():
            if k.endswith("_token") and len(k) > 6 and token_text(v):
                tokens[k] = token_text(v)
        templates.append({"name": f"{tok}-tokenizer_config", "kind": "tokenizer_config",
                          "path": rel, "tokens": tokens, "source": cfg["chat_template"]})
    return templates


def main():
    env = make_env()
    templates = load_templates()
    cases = []
    for t in templates:
        compiled = env.from_string(t["source"])
        for s in SCENARIOS:
            ctx = dict(t["tokens"])
            ctx.update(messages=json.loads(json.dumps(s["messages"])),
                       tools=json.loads(json.dumps(s["tools"])) if "tools" in s else None,
                       documents=None,
                       add_generation_prompt=s.get("add_generation_prompt", True))
            ctx.update(s.get("kwargs", {}))
            case = {"template": t["name"], "scenario": s["name"]}
            try:
                case["expected"] = compiled.render(**ctx)
            except TemplateError as e:  # raise_exception and jinja's own errors
                case["error"] = str(e)
                case["error_type"] = type(e).__name__
            except Exception as e:  # Python errors inside the template (TypeError, ...)
                case["error"] = str(e)
                case["error_type"] = type(e).__name__
            cases.append(case)
    out = {
        "generator": "tools/make_template_goldens.py",
        "jinja2_version": jinja2.__version__,
        "fixed_now": FIXED_NOW.isoformat(),
        "templates": [{k: v for k, v in t.items() if k != "source"} for t in templates],
        "scenarios": SCENARIOS,
        "cases": cases,
    }
    path = os.path.join(OUT_DIR, "goldens.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    errors = sum(1 for c in cases if "error" in c)
    print(f"wrote {path}: {len(cases)} cases ({errors} expect an error)", file=sys.stderr)


if __name__ == "__main__":
    main()
