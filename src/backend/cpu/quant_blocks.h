// Byte layouts of GGML's block-quantized formats (ggml-common.h), as offsets into a block, plus the
// scalar helpers the kernels share. Blocks are read through byte pointers: they are unaligned in
// GGUF.
#pragma once

#include <cstdint>
#include <cstring>

#include "tensor/dtype.h"

namespace tf::backend::cpu::quant {

// Every format below stores, per block: `kBlock` elements in `kBytes` bytes.
struct Q4_0 {  // fp16 d; u8 qs[16]: element j in the low nibble of qs[j], j+16 in the high one
  static constexpr int kBlock = 32, kBytes = 18, kQs = 2;
};
struct Q4_1 {  // fp16 d, m; u8 qs[16]
  static constexpr int kBlock = 32, kBytes = 20, kQs = 4;
};
struct Q5_0 {  // fp16 d; u8 qh[4] (bit j = 5th bit of element j); u8 qs[16]
  static constexpr int kBlock = 32, kBytes = 22, kQh = 2, kQs = 6;
};
struct Q5_1 {  // fp16 d, m; u8 qh[4]; u8 qs[16]
  static constexpr int kBlock = 32, kBytes = 24, kQh = 4, kQs = 8;
};
struct Q8_0 {  // fp16 d; i8 qs[32]
  static constexpr int kBlock = 32, kBytes = 34, kQs = 2;
};
struct Q4_K {  // fp16 d, dmin; u8 scales[12] (6-bit scale/min pairs); u8 qs[128]
  static constexpr int kBlock = 256, kBytes = 144, kScales = 4, kQs = 16;
};
struct Q5_K {  // fp16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]
  static constexpr int kBlock = 256, kBytes = 176, kScales = 4, kQh = 16, kQs = 48;
};
struct Q6_K {  // u8 ql[128]; u8 qh[64]; i8 scales[16]; fp16 d
  static constexpr int kBlock = 256, kBytes = 210, kQl = 0, kQh = 128, kScales = 192, kD = 208;
};

// The layouts of the formats whose products take int8 activations (q8_dot.h), by dtype.
template <DType T>
struct Int8Block;
template <>
struct Int8Block<DType::kQ4_0> : Q4_0 {};
template <>
struct Int8Block<DType::kQ4_1> : Q4_1 {};
template <>
struct Int8Block<DType::kQ8_0> : Q8_0 {};

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// The 6-bit (scale, min) pair of sub-block j (0..7) of a q4_K/q5_K block (ggml's get_scale_min_k4).
inline void scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

}  // namespace tf::backend::cpu::quant
