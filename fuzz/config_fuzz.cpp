// libFuzzer target for HF config.json parsing: any text yields a ModelConfig or an Error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "checkpoint/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = tf::checkpoint::config_from_hf_json(text, "fuzz/config.json");
  if (c.ok()) (void)c->validate();
  return 0;
}
