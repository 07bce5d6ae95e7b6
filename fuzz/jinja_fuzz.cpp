// libFuzzer target for the Jinja engine: arbitrary template bytes are lexed, parsed and rendered
// against a small chat-like context. Must never crash; tight limits keep each input fast.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "chat/jinja/template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nlohmann::ordered_json kContext = nlohmann::ordered_json::parse(R"({
    "messages": [{"role": "system", "content": "sys"},
                 {"role": "user", "content": "hi <think>x</think>"},
                 {"role": "assistant", "content": "", "tool_calls": [
                   {"id": "a1", "type": "function",
                    "function": {"name": "f", "arguments": {"x": 1, "y": [1.5, null, true]}}}]},
                 {"role": "tool", "content": [{"type": "text", "text": "ok"}]}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
  std::string_view source(reinterpret_cast<const char*>(data), size);
  auto t = tf::chat::jinja::Template::parse(source);
  if (!t.ok()) return 0;
  tf::chat::jinja::RenderConfig config;
  config.limits.max_steps = 200'000;
  config.limits.max_output_bytes = 1 << 20;
  config.limits.max_call_depth = 64;
  config.clock = [] { return std::tm{}; };
  (void)t->render(kContext, config);
  return 0;
}
