// Tests of the CPU matmul kernels against scalar reference dequantizers written here from the GGML
// block formats (independently of the kernels), and of the bit-exactness contract of matmul.
#include "backend/cpu/matmul.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <utility>
#include <vector>

#include "backend/cpu/q8_dot.h"
#include "base/half.h"
#include "base/thread_pool.h"

namespace tf::backend::cpu {
namespace {

const DType kAllTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ4_0,
                           DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0,
                           DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

float h2f(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_f32(h);
}

// Scalar reference: element e of a block, straight from the format description.
void ref_block(DType t, const uint8_t* b, float* y) {
  switch (t) {
    case DType::kQ4_0:  // d; qs[16]; e < 16: low nibble of qs[e], else high nibble of qs[e-16]
      for (int e = 0; e < 32; ++e) {
        int q = e < 16 ? (b[2 + e] & 15) : (b[2 + e - 16] >> 4);
        y[e] = static_cast<float>(q - 8) * h2f(b);
      }
      break;
    case DType::kQ4_1:
      for (int e = 0; e < 32; ++e) {
        int q = e < 16 ? (b[4 + e] & 15) : (b[4 + e - 16] >> 4);
        y[e] = std::fma(static_cast<float>(q), h2f(b), h2f(b + 2));
      }
      break;
    case DType::kQ5_0:
    case DType::kQ5_1: {
      const bool affine = t == DType::kQ5_1;
      const uint8_t* qh = b + (affine ? 4 : 2);
      const uint8_t* qs = qh + 4;
      for (int e = 0; e < 32; ++e) {
        int q = e < 16 ? (qs[e] & 15) : (qs[e - 16] >> 4);
        q |= ((qh[e / 8] >> (e % 8)) & 1) << 4;
        y[e] = affine ? std::fma(static_cast<float>(q), h2f(b), h2f(b + 2))
                      : static_cast<float>(q - 16) * h2f(b);
      }
      break;
    }
    case DType::kQ8_0:
      for (int e = 0; e < 32; ++e)
        y[e] = static_cast<float>(static_cast<int8_t>(b[2 + e])) * h2f(b);
      break;
    case DType::kQ4_K:
    case DType::kQ5_K: {
      const bool five = t == DType::kQ5_K;
      const uint8_t* sc = b + 4;
      const uint8_t* qh = b + 16;
      const uint8_t* qs = b + (five ? 48 : 16);
      for (int e = 0; e < 256; ++e) {
        const int j = e / 32;  // sub-block: 64-element group j/2, low (even j) or high nibbles
        int s, m;
        if (j < 4) {
          s = sc[j] & 63;
          m = sc[j + 4] & 63;
        } else {
          s = (sc[j + 4] & 15) | ((sc[j - 4] >> 6) << 4);
          m = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
        }
        const int l = e % 32;
        const uint8_t byte = qs[32 * (j / 2) + l];
        int q = j % 2 == 0 ? (byte & 15) : (byte >> 4);
        if (five) q += ((qh[l] >> j) & 1) ? 16 : 0;
        const float d1 = h2f(b) * static_cast<float>(s);
        const float m1 = h2f(b + 2) * static_cast<float>(m);
        y[e] = std::fma(d1, static_cast<float>(q), -m1);
      }
      break;
    }
    case DType::kQ6_K: {
      const uint8_t* ql = b;
      const uint8_t* qh = b + 128;
      const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
      const float d = h2f(b + 208);
      for (int e = 0; e < 256; ++e) {
        const int half = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
        const uint8_t lb = ql[64 * half + l + (quarter % 2 == 1 ? 32 : 0)];
        const int lo = quarter < 2 ? (lb & 15) : (lb >> 4);
        const int hi = (qh[32 * half + l] >> (2 * quarter)) & 3;
        const int q = (lo | (hi << 4)) - 32;
        const float d1 = d * static_cast<float>(sc[8 * half + 2 * quarter + l / 16]);
        y[e] = d1 * static_cast<float>(q);
      }
      break;
    }
    default:
      FAIL() << "no reference for " << dtype_name(t);
  }
}

std::vector<float> ref_dequant(DType t, const std::vector<uint8_t>& row, int64_t k) {
  std::vector<float> y(k);
  for (int64_t i = 0; i < k; ++i) {
    if (t == DType::kF32) {
      std::memcpy(&y[i], &row[4 * i], 4);
    } else if (t == DType::kF16) {
      y[i] = h2f(&row[2 * i]);
    } else if (t == DType::kBF16) {
      uint16_t v;
      std::memcpy(&v, &row[2 * i], 2);
      y[i] = bf16_to_f32(v);
    }
  }
  if (is_quantized(t)) {
    const auto& info = dtype_info(t);
    for (int64_t b = 0; b < k / info.block_size; ++b) {
      ref_block(t, &row[b * info.block_bytes], &y[b * info.block_size]);
    }
  }
  return y;
}

void put_fp16(uint8_t* p, float f) {
  uint16_t h = f32_to_fp16(f);
  std::memcpy(p, &h, 2);
}

// Random rows: random quant bytes; fp16 scales in a sane range (signed d, non-negative K mins).
std::vector<uint8_t> random_rows(DType t, int64_t rows, int64_t k, std::mt19937& rng) {
  const size_t row_bytes = dtype_row_bytes(t, k);
  std::vector<uint8_t> data(row_bytes * rows);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.001f, 0.1f), val(-2.0f, 2.0f);
  auto sscale = [&] { return byte(rng) & 1 ? scale(rng) : -scale(rng); };
  for (auto& b : data) b = static_cast<uint8_t>(byte(rng));
  const auto& info = dtype_info(t);
  if (!info.quantized) {
    for (int64_t i = 0; i < rows * k; ++i) {
      const float f = val(rng);
      if (t == DType::kF32) std::memcpy(&data[4 * i], &f, 4);
      if (t == DType::kF16) put_fp16(&data[2 * i], f);
      if (t == DType::kBF16) {
        uint16_t v = f32_to_bf16(f);
        std::memcpy(&data[2 * i], &v, 2);
      }
    }
    return data;
  }
  for (size_t off = 0; off < data.size(); off += info.block_bytes) {
    uint8_t* b = &data[off];
    switch (t) {
      case DType::kQ4_1:
      case DType::kQ5_1:
        put_fp16(b, sscale());
        put_fp16(b + 2, val(rng));
        break;
      case DType::kQ4_K:
      case DType::kQ5_K:
        put_fp16(b, scale(rng) * 0.1f);
        put_fp16(b + 2, scale(rng) * 0.1f);
        break;
      case DType::kQ6_K:
        put_fp16(b + 208, sscale() * 0.1f);
        break;
      default:  // q4_0, q5_0, q8_0: d first
        put_fp16(b, sscale());
    }
  }
  return data;
}

std::vector<float> random_x(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = val(rng);
  return x;
}

std::vector<int64_t> lengths(DType t) {
  const int bs = dtype_info(t).block_size;
  if (bs == 1) {
    std::vector<int64_t> ks;
    for (int64_t k = 1; k <= 33; k += 2) ks.push_back(k);
    ks.insert(ks.end(), {64, 100, 577, 1536});
    return ks;
  }
  if (bs == 32) return {32, 64, 32 * 7, 32 * 29, 1536};
  return {256, 512, 256 * 3, 256 * 9};
}

// dot_row for q4_0, q4_1 and q8_0, written here from q8_dot.h's description of the scheme: x
// quantized per 32-element block, exact integer block sums, then its float order.
float ref_q8_dot(DType t, const std::vector<uint8_t>& rows, int64_t n, const float* x, int64_t k) {
  const auto& info = dtype_info(t);
  const uint8_t* row = rows.data() + n * dtype_row_bytes(t, k);
  const int qs = t == DType::kQ4_1 ? 4 : 2;
  float acc = 0.0f;
  for (int64_t b = 0; b < k / 32; ++b) {
    const float* xb = x + 32 * b;
    float amax = 0.0f;
    bool finite = true;
    for (int i = 0; i < 32; ++i) {
      finite = finite && std::isfinite(xb[i]);
      amax = std::max(amax, std::fabs(xb[i]));
    }
    const float d = finite ? amax / 127.0f : NAN;
    float id = finite && d > 0.0f ? 1.0f / d : 0.0f;
    if (!std::isfinite(id)) id = 0.0f;  // blocks so small that 1 / d overflows
    const uint8_t* blk = row + b * info.block_bytes;
    int32_t isum = 0, qsum = 0;
    for (int i = 0; i < 32; ++i) {
      const int32_t q = static_cast<int32_t>(std::nearbyint(xb[i] * id));
      int32_t u = i < 16 ? blk[qs + i] & 15 : blk[qs + i - 16] >> 4;
      if (t == DType::kQ4_0) u -= 8;
      if (t == DType::kQ8_0) u = static_cast<int8_t>(blk[qs + i]);
      isum += u * q;
      qsum += q;
    }
    acc = std::fma(static_cast<float>(isum), h2f(blk) * d, acc);
    if (t == DType::kQ4_1) acc = std::fma(h2f(blk + 2), d * static_cast<float>(qsum), acc);
  }
  return acc;
}

class MatmulTypes : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulTypes, DequantizeRowMatchesReferenceExactly) {
  const DType t = GetParam();
  std::mt19937 rng(1);
  for (int64_t k : lengths(t)) {
    const auto row = random_rows(t, 1, k, rng);
    const auto ref = ref_dequant(t, row, k);
    std::vector<float> got(k, -1.0f);
    dequantize_row(t, row.data(), got.data(), k);
    for (int64_t i = 0; i < k; ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(ref[i]))
          << dtype_name(t) << " k=" << k << " i=" << i << " got " << got[i] << " want " << ref[i];
    }
  }
}

// Metric: |dot_row - exact| / sum_i |w_i x_i|, with `exact` computed in double from the reference
// dequantization; relative to the sum of magnitudes so that cancellation cannot inflate it.
TEST_P(MatmulTypes, DotRowMatchesReference) {
  const DType t = GetParam();
  std::mt19937 rng(2);
  for (int64_t k : lengths(t)) {
    for (int trial = 0; trial < 4; ++trial) {
      const auto row = random_rows(t, 1, k, rng);
      const auto x = random_x(k, rng);
      const auto w = ref_dequant(t, row, k);
      double exact = 0, mag = 0;
      for (int64_t i = 0; i < k; ++i) {
        exact += static_cast<double>(w[i]) * x[i];
        mag += std::fabs(static_cast<double>(w[i]) * x[i]);
      }
      const float got = dot_row(t, row.data(), x.data(), k);
      double bound = 1e-5 * mag + 1e-30;
      if (uses_q8_activations(t)) {
        // Bit for bit the scheme of q8_dot.h; off the exact sum by at most half a step of x's
        // int8 grid per element: sum over blocks of d_x / 2 * sum |w_i|.
        const float want = ref_q8_dot(t, row, 0, x.data(), k);
        ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want))
            << dtype_name(t) << " k=" << k << " got " << got << " want " << want;
        for (int64_t b = 0; b < k / 32; ++b) {
          double amax = 0, wsum = 0;
          for (int64_t i = 32 * b; i < 32 * b + 32; ++i) {
            amax = std::max(amax, static_cast<double>(std::fabs(x[i])));
            wsum += std::fabs(static_cast<double>(w[i]));
          }
          bound += amax / 127 / 2 * 1.0001 * wsum;
        }
      }
      ASSERT_LE(std::fabs(got - exact), bound)
          << dtype_name(t) << " k=" << k << " got " << got << " exact " << exact;
    }
  }
}

// matmul at M = 1..9 and 17 on 1 to 3 threads against dot_row, bit for bit.
void check_matmul_against_dot_row(DType t, int64_t k) {
  std::mt19937 rng(3);
  const int64_t n = 257;  // odd, and large enough that every pool size really splits the work
  const auto data = random_rows(t, n, k, rng);
  Tensor w{t, {n, k}, data.data()};
  const auto x = random_x(17 * k, rng);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 17}) {
      std::vector<float> y(m * n, NAN);
      matmul(w, x.data(), m, y.data(), &pool);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const float want = dot_row(t, w.row(j), x.data() + i * k, k);
          ASSERT_EQ(std::bit_cast<uint32_t>(y[i * n + j]), std::bit_cast<uint32_t>(want))
              << dtype_name(t) << " threads=" << threads << " m=" << m << " row " << i << " col "
              << j;
        }
      }
    }
  }
}

// Two widths per type: a short one, and for quantized types one whose 5 to 8 packed x rows
// overflow L1, so batched decode runs K in chunks (3 to 5 of them: first, middle and last).
TEST_P(MatmulTypes, MatmulBitIdenticalToDotRow) {
  const DType t = GetParam();
  const int bs = dtype_info(t).block_size;
  for (const int64_t k : {bs == 1    ? int64_t{517}
                          : bs == 32 ? 32 * 29
                                     : 256 * 3,
                          bs == 1    ? int64_t{1031}
                          : bs == 32 ? 32 * 49
                                     : 256 * 9}) {
    check_matmul_against_dot_row(t, k);
  }
}

TEST_P(MatmulTypes, EmbeddingRowsMatchDequantizeRow) {
  const DType t = GetParam();
  std::mt19937 rng(4);
  const int64_t k = dtype_info(t).block_size == 256 ? 512 : 96;
  const int64_t rows = 11;
  const auto data = random_rows(t, rows, k, rng);
  Tensor table{t, {rows, k}, data.data()};
  const std::vector<int32_t> ids = {3, 0, 10, 3, 7};
  std::vector<float> out(ids.size() * k);
  embedding_rows(table, ids.data(), static_cast<int64_t>(ids.size()), out.data());
  std::vector<float> want(k);
  for (size_t i = 0; i < ids.size(); ++i) {
    dequantize_row(t, table.row(ids[i]), want.data(), k);
    ASSERT_EQ(0, std::memcmp(want.data(), &out[i * k], k * sizeof(float))) << dtype_name(t);
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTypes, ::testing::ValuesIn(kAllTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Matmul, NullPoolAndEmpty) {
  std::mt19937 rng(5);
  const int64_t n = 5, k = 64;
  const auto data = random_rows(DType::kQ8_0, n, k, rng);
  Tensor w{DType::kQ8_0, {n, k}, data.data()};
  const auto x = random_x(k, rng);
  std::vector<float> y(n);
  matmul(w, x.data(), 1, y.data(), nullptr);
  for (int64_t j = 0; j < n; ++j) EXPECT_EQ(y[j], dot_row(DType::kQ8_0, w.row(j), x.data(), k));
  matmul(w, x.data(), 0, nullptr, nullptr);  // no rows: nothing to do, nothing touched
}

// matmul_many splits the rows of several products over the pool together (a chunk may span two
// of them); every output must still be what matmul gives for its own product.
// Mixed dtypes too: a pool chunk may span an int8-activation product and an f32 one.
TEST(Matmul, ManyEqualsOneByOne) {
  std::mt19937 rng(9);
  const int64_t k = 256;
  const int64_t rows[] = {37, 5, 70};
  const DType types[] = {DType::kQ4_1, DType::kQ6_K, DType::kQ4_0};
  std::vector<std::vector<uint8_t>> data;
  std::vector<Tensor> ws;
  for (int i = 0; i < 3; ++i) data.push_back(random_rows(types[i], rows[i], k, rng));
  for (int i = 0; i < 3; ++i) ws.push_back(Tensor{types[i], {rows[i], k}, data[i].data()});
  const auto x = random_x(6 * k, rng);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t m : {1, 4, 6}) {
      std::vector<std::vector<float>> got(3), want(3);
      for (int i = 0; i < 3; ++i) {
        got[i].assign(m * rows[i], NAN);
        want[i].assign(m * rows[i], NAN);
        matmul(ws[i], x.data(), m, want[i].data(), nullptr);
      }
      const Tensor* w[] = {&ws[0], &ws[1], &ws[2]};
      float* y[] = {got[0].data(), got[1].data(), got[2].data()};
      matmul_many(w, y, 3, x.data(), m, &pool);
      for (int i = 0; i < 3; ++i) {
        for (size_t j = 0; j < got[i].size(); ++j) {
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i][j]), std::bit_cast<uint32_t>(want[i][j]))
              << "product " << i << " m=" << m << " threads=" << threads << " at " << j;
        }
      }
    }
  }
}

// Every instruction set of the int8-activation kernels against the portable one, bit for bit, at
// every batch path (few rows in one pass, groups of 8 with a partial group or with the rows left
// over in a few-row pass), with odd N so that rows fall to the per-row tail.
// Rows 2 and 5 hold blocks so small that 1 / d overflows (normal and subnormal).
TEST(Q8Activations, EveryInstructionSetGivesTheSameBits) {
  if (q8_best_isa() == Q8Isa::kGeneric) GTEST_SKIP() << "this CPU has only the portable kernels";
  struct Restore {
    ~Restore() { q8_use_isa(q8_best_isa()); }
  } restore;
  std::mt19937 rng(11);
  const int64_t n = 37, k = 32 * 7;
  auto x = random_x(17 * k, rng);
  for (int64_t i = 0; i < 32; ++i) {
    x[2 * k + 64 + i] *= 1e-38f;
    x[5 * k + i] *= 1e-41f;
  }
  for (DType t : {DType::kQ4_0, DType::kQ4_1, DType::kQ8_0}) {
    const auto data = random_rows(t, n, k, rng);
    Tensor w{t, {n, k}, data.data()};
    for (int64_t m : {1, 2, 3, 5, 6, 7, 8, 13, 14, 15, 17}) {
      std::vector<float> want(m * n), got(m * n);
      q8_use_isa(Q8Isa::kGeneric);
      matmul(w, x.data(), m, want.data(), nullptr);
      for (Q8Isa isa : {Q8Isa::kAvx2, Q8Isa::kAvx512Vnni, Q8Isa::kAmx}) {
        if (isa > q8_best_isa()) continue;
        q8_use_isa(isa);
        matmul(w, x.data(), m, got.data(), nullptr);
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * sizeof(float)))
            << dtype_name(t) << " m=" << m << " isa=" << static_cast<int>(isa);
      }
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const float want_row = ref_q8_dot(t, data, j, x.data() + i * k, k);
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i * n + j]), std::bit_cast<uint32_t>(want_row))
              << dtype_name(t) << " m=" << m << " row " << i << " col " << j;
        }
      }
    }
  }
}

// matmul of w (its bytes `data`) with the first m rows of x, for each m and on every instruction
// set, bit for bit the written reference's (where the dtype takes int8 activations).
void expect_reference_on_every_path(const Tensor& w, const std::vector<uint8_t>& data,
                                    const float* x, std::initializer_list<int64_t> ms) {
  const DType t = w.dtype;
  const int64_t n = w.rows(), k = w.cols();
  for (int isa = 0; isa <= static_cast<int>(q8_best_isa()); ++isa) {
    q8_use_isa(static_cast<Q8Isa>(isa));
    for (int64_t m : ms) {
      std::vector<float> y(m * n);
      matmul(w, x, m, y.data(), nullptr);
      if (!uses_q8_activations(t)) continue;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_EQ(std::bit_cast<uint32_t>(y[i * n + j]),
                    std::bit_cast<uint32_t>(ref_q8_dot(t, data, j, x + i * k, k)))
              << dtype_name(t) << " isa " << isa << " m=" << m << " row " << i << " col " << j;
        }
      }
    }
  }
}

// The largest block sums the kernels can meet: every q4 integer 15 (q8_0: -127 or 127) against x
// blocks whose quantized values are all +-127, at the batch paths that sum in 16-bit lanes (the
// AVX2 kernels keep q4's quad sums there, within +-30,720) and the others, on every instruction
// set: exact, as the written reference gives them.
TEST(Q8Activations, LargestBlockSumsStayExact) {
  struct Restore {
    ~Restore() { q8_use_isa(q8_best_isa()); }
  } restore;
  std::mt19937 rng(14);
  const int64_t n = 16, k = 32 * 6;
  std::vector<float> x(17 * k);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i / k) % 3 == 1 ? -1.0f : 1.0f;
  for (DType t : {DType::kQ4_0, DType::kQ4_1, DType::kQ8_0}) {
    auto data = random_rows(t, n, k, rng);
    const auto bytes = static_cast<size_t>(dtype_info(t).block_bytes);
    const size_t first = t == DType::kQ4_1 ? 4 : 2;  // past the fp16 scale(s)
    for (size_t off = 0; off < data.size(); off += bytes) {
      for (size_t b = first; b < bytes; ++b) {
        data[off + b] = t == DType::kQ8_0 ? ((off / bytes) % 2 ? 0x81 : 0x7F) : 0xFF;
      }
    }
    Tensor w{t, {n, k}, data.data()};
    expect_reference_on_every_path(w, data, x.data(), {1, 3, 8, 17});
  }
}

// Weights that end exactly where an unreadable page begins: no kernel may read past the last row
// (an odd block count makes the batched kernel's last pair a single block), on every instruction
// set and batch path, and the results stay those of the written reference. (Checked: pointing the
// last pair's scale gather at a second block makes this test crash.)
TEST(Q8Activations, NeverReadsPastTheWeights) {
  struct Restore {
    ~Restore() { q8_use_isa(q8_best_isa()); }
  } restore;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::mt19937 rng(13);
  const int64_t k = 96;
  const auto x = random_x(19 * k, rng);
  // 8 rows: the last one in a 4-row pass; 5: in the one-row tail.
  for (const auto& [t, n] :
       {std::pair{DType::kQ4_0, int64_t{8}}, std::pair{DType::kQ4_1, int64_t{8}},
        std::pair{DType::kQ8_0, int64_t{8}}, std::pair{DType::kQ4_1, int64_t{5}}}) {
    const auto data = random_rows(t, n, k, rng);
    const size_t pages = (data.size() + page - 1) / page + 1;
    void* map =
        mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(map, MAP_FAILED);
    auto* guard = static_cast<uint8_t*>(map) + (pages - 1) * page;
    ASSERT_EQ(0, mprotect(guard, page, PROT_NONE));
    uint8_t* w_data = guard - data.size();
    std::memcpy(w_data, data.data(), data.size());
    Tensor w{t, {n, k}, w_data};
    expect_reference_on_every_path(w, data, x.data(), {1, 2, 5, 7, 9, 14, 19});
    munmap(map, pages * page);
  }
}

// A block of x holding Inf or NaN makes that row's outputs NaN (as the f32 products would make
// them Inf or NaN), on every path and instruction set; the other rows are untouched.
TEST(Q8Activations, NonFiniteActivationsGiveNaN) {
  std::mt19937 rng(12);
  const int64_t n = 19, k = 64, m = 9;
  auto x = random_x(m * k, rng);
  x[1 * k + 40] = INFINITY;
  x[6 * k + 3] = NAN;
  const auto data = random_rows(DType::kQ4_1, n, k, rng);
  Tensor w{DType::kQ4_1, {n, k}, data.data()};
  struct Restore {
    ~Restore() { q8_use_isa(q8_best_isa()); }
  } restore;
  for (int isa = 0; isa <= static_cast<int>(q8_best_isa()); ++isa) {
    q8_use_isa(static_cast<Q8Isa>(isa));
    for (int64_t rows : {int64_t{1}, m}) {
      std::vector<float> y(rows * n);
      matmul(w, x.data(), rows, y.data(), nullptr);
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          EXPECT_EQ(i == 1 || i == 6, std::isnan(y[i * n + j]))
              << "row " << i << " of " << rows << " isa " << isa;
        }
      }
    }
  }
  EXPECT_TRUE(std::isnan(dot_row(DType::kQ4_1, data.data(), x.data() + k, k)));
}

}  // namespace
}  // namespace tf::backend::cpu
