// libFuzzer target for the safetensors reader: hostile headers must fail with an Error (no
// exception, no out-of-range tensor view).
#include <cstddef>
#include <cstdint>

#include "checkpoint/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = tf::checkpoint::SafetensorsFile::parse({data, size}, "fuzz.safetensors");
  if (!r.ok()) return 0;
  volatile uint8_t sink = 0;
  for (const auto& name : (*r)->names()) {
    auto t = (*r)->get(name);
    if (!t.ok()) continue;
    size_t n = (*t)->nbytes();
    if (n > 0) {  // first and last byte must lie inside the input
      const auto* b = static_cast<const uint8_t*>((*t)->data);
      sink = sink + b[0] + b[n - 1];
    }
  }
  return 0;
}
