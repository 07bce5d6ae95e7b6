// libFuzzer target for the Responses request parser and the input-item mapping: any bytes, parsed
// as JSON without exceptions, must give a ResponsesRequest whose items map onto well-formed chat
// messages, or a 4xx naming the field, never a crash. The first byte picks HTTP or WebSocket mode.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/responses_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool websocket = data[0] & 1;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto body = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  auto r = tf::api::parse_responses_request(body, websocket);
  if (!r.ok()) {
    // Every refusal names its field, but for a body that is not an object.
    if (r.error().status < 400 || (body.is_object() && !r.error().param)) __builtin_trap();
    return 0;
  }
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  std::set<std::string> calls;
  int n = 0;
  auto e = tf::api::append_input_items(r->input, messages, calls,
                                       [&](const char* p) { return p + std::to_string(n++); });
  if (e) {
    if (e->status < 400 || !e->param) __builtin_trap();
    return 0;
  }
  for (const auto& m : messages) {
    if (!m.contains("role") || !m.contains("content") || !m["content"].is_string())
      __builtin_trap();
  }
  for (const auto& item : r->input) {
    if (!item.contains("id") || !item["id"].is_string()) __builtin_trap();  // every item got one
  }
  return 0;
}
