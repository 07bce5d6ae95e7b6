// Element types, including GGML's block-quantized formats: each type stores `block_size` elements
// in `block_bytes` bytes along the innermost dimension.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tf {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kI32,
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ8_0,
  kQ2_K,
  kQ3_K,
  kQ4_K,
  kQ5_K,
  kQ6_K,
};

struct DTypeInfo {
  std::string_view name;
  int block_size;   // elements per block (1 for plain types)
  int block_bytes;  // bytes per block
  bool quantized;
};

const DTypeInfo& dtype_info(DType t);
inline std::string_view dtype_name(DType t) { return dtype_info(t).name; }
inline bool is_quantized(DType t) { return dtype_info(t).quantized; }

// Bytes taken by `n` elements of `t` along the innermost dimension; n must be a multiple of the
// block size (checkpoint readers validate that before constructing tensors).
inline size_t dtype_row_bytes(DType t, int64_t n) {
  const auto& i = dtype_info(t);
  return static_cast<size_t>(n / i.block_size) * static_cast<size_t>(i.block_bytes);
}

// GGML's numeric type ids (ggml.h `enum ggml_type`) <-> DType; nullopt for types we do not support.
std::optional<DType> dtype_from_ggml(uint32_t ggml_type);
std::string_view ggml_type_name(uint32_t ggml_type);

}  // namespace tf
