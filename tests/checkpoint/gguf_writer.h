// A tiny in-memory GGUF writer for tests: builds valid files (and, by poking bytes or fields,
// malformed ones) without any file on disk.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "checkpoint/gguf.h"

namespace tf::checkpoint::testing {

using Bytes = std::vector<uint8_t>;

template <typename T>
void put(Bytes& b, T v) {
  uint8_t tmp[sizeof(T)];
  std::memcpy(tmp, &v, sizeof(T));  // the test hosts are little-endian, as GGUF is
  b.insert(b.end(), tmp, tmp + sizeof(T));
}
inline void put_str(Bytes& b, std::string_view s) {
  put<uint64_t>(b, s.size());
  b.insert(b.end(), s.begin(), s.end());
}

struct GgufWriter {
  struct TensorSpec {
    std::string name;
    std::vector<uint64_t> ne;  // innermost first, as GGUF stores it
    uint32_t ggml_type = 0;
    Bytes data;
    int64_t offset_override = -1;
  };

  uint32_t version = 3;
  uint64_t alignment = 32;
  Bytes kv;
  uint64_t n_kv = 0;
  std::vector<TensorSpec> tensors;

  // Appends a key with a raw, already-encoded value of type `t`.
  void raw(std::string_view key, GgufType t, const Bytes& value) {
    put_str(kv, key);
    put<uint32_t>(kv, static_cast<uint32_t>(t));
    kv.insert(kv.end(), value.begin(), value.end());
    ++n_kv;
  }
  template <typename T>
  void scalar(std::string_view key, GgufType t, T v) {
    Bytes b;
    put<T>(b, v);
    raw(key, t, b);
  }
  void u32(std::string_view key, uint32_t v) { scalar(key, GgufType::kU32, v); }
  void f32(std::string_view key, float v) { scalar(key, GgufType::kF32, v); }
  void str(std::string_view key, std::string_view v) {
    Bytes b;
    put_str(b, v);
    raw(key, GgufType::kString, b);
  }
  void str_array(std::string_view key, const std::vector<std::string>& v) {
    Bytes b;
    put<uint32_t>(b, static_cast<uint32_t>(GgufType::kString));
    put<uint64_t>(b, v.size());
    for (const auto& s : v) put_str(b, s);
    raw(key, GgufType::kArray, b);
  }
  void tensor_f32(std::string name, std::vector<uint64_t> ne) {
    uint64_t n = 1;
    for (auto d : ne) n *= d;
    Bytes data;
    for (uint64_t i = 0; i < n; ++i) put<float>(data, static_cast<float>(i));
    tensors.push_back({std::move(name), std::move(ne), 0, std::move(data)});
  }

  Bytes build() const {
    Bytes b = {'G', 'G', 'U', 'F'};
    put<uint32_t>(b, version);
    put<uint64_t>(b, tensors.size());
    put<uint64_t>(b, n_kv);
    b.insert(b.end(), kv.begin(), kv.end());
    uint64_t off = 0;
    std::vector<uint64_t> offsets;
    for (const auto& t : tensors) {
      offsets.push_back(t.offset_override >= 0 ? static_cast<uint64_t>(t.offset_override) : off);
      off = (off + t.data.size() + alignment - 1) / alignment * alignment;
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto& t = tensors[i];
      put_str(b, t.name);
      put<uint32_t>(b, static_cast<uint32_t>(t.ne.size()));
      for (auto d : t.ne) put<uint64_t>(b, d);
      put<uint32_t>(b, t.ggml_type);
      put<uint64_t>(b, offsets[i]);
    }
    if (tensors.empty()) return b;
    while (b.size() % alignment) b.push_back(0);
    size_t data_start = b.size();
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].offset_override >= 0) continue;
      size_t at = data_start + offsets[i];
      if (b.size() < at) b.resize(at, 0);
      b.insert(b.end(), tensors[i].data.begin(), tensors[i].data.end());
    }
    return b;
  }
};

}  // namespace tf::checkpoint::testing
