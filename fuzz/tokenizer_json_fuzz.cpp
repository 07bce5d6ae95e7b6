// libFuzzer target: arbitrary bytes as tokenizer.json text must load or fail cleanly, and any
// tokenizer that loads must encode and decode a short string without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tok = tf::tokenizer::Tokenizer::from_json(text, "fuzz.json");
  if (!tok.ok()) return 0;
  const auto& t = **tok;
  for (std::string_view s : {std::string_view("Hello world <s> 12 \xF0\x9F\x99\x82"),
                             std::string_view("\xFF\xC3(  \n")}) {
    auto ids = t.encode(s, true, true);
    std::string back = t.decode(ids, false);
    for (auto id : ids) (void)t.token_bytes(id);
    (void)back;
  }
  return 0;
}
