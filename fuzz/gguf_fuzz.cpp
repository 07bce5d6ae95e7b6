// libFuzzer target for the GGUF reader: any bytes must parse or fail with an Error, never crash;
// on success, every accessor is exercised so lazily-read data is touched too.
#include <cstddef>
#include <cstdint>

#include "checkpoint/gguf.h"
#include "checkpoint/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = tf::checkpoint::GgufFile::parse({data, size}, "fuzz.gguf");
  if (!r.ok()) return 0;
  const auto& g = **r;
  for (const auto& [k, v] : g.metadata()) {
    (void)g.get_int(k), (void)g.get_float(k), (void)g.get_string(k), (void)g.get_bool(k);
    (void)g.get_string_array(k), (void)g.get_float_array(k), (void)g.get_int_array(k);
  }
  volatile uint8_t sink = 0;
  for (const auto& t : g.tensors()) {
    auto p = g.get_tensor(t.name);
    if (t.nbytes > 0) {  // first and last byte must lie inside the input
      const auto* b = static_cast<const uint8_t*>(t.tensor.data);
      sink = sink + b[0] + b[t.nbytes - 1];
    }
    if (p.ok()) (void)(*p)->nbytes();
  }
  if (auto c = tf::checkpoint::config_from_gguf(g); c.ok()) (void)c->validate();
  return 0;
}
