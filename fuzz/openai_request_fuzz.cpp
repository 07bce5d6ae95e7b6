// libFuzzer target for the OpenAI request parsers: any bytes, parsed as JSON without exceptions,
// must give a ChatRequest/CompletionRequest or an ApiError naming the field, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto body = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  auto chat = tf::api::parse_chat_request(body);
  if (!chat.ok() && chat.error().status < 400) __builtin_trap();
  auto completion = tf::api::parse_completion_request(body);
  if (!completion.ok() && completion.error().status < 400) __builtin_trap();
  return 0;
}
