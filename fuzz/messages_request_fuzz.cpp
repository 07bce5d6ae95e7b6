// libFuzzer target for the Anthropic Messages request parser: any bytes, parsed as JSON without
// exceptions, must give a MessagesRequest (whose conversation is well formed) or a 4xx naming the
// field, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/anthropic_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto body = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  for (bool count_only : {false, true}) {
    auto r = tf::api::parse_messages_request(body, count_only);
    if (!r.ok()) {
      if (r.error().status < 400 || r.error().message.empty()) __builtin_trap();
      continue;
    }
    for (const auto& m : r->messages) {  // every mapped message has a role and string content
      if (!m.contains("role") || !m.contains("content") || !m["content"].is_string())
        __builtin_trap();
    }
    if (!count_only && !r->common.max_tokens) __builtin_trap();
  }
  return 0;
}
