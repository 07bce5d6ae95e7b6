// H200 probe: may cuBLASLt compute prefill GEMMs in the canonical matmul order? It asks three
// questions and prints the answers: (1) is one mma.sync's k16 sum independent of the order of its
// 16 products (a fused block)? (2) does cuBLASLt, with no split-K, give per element exactly a
// chain of natural-order k16 mma.sync steps from zero (and with beta = 1, that chain plus C)?
// (3) how fast is cuBLASLt run part by part, against our tiled kernel? (4) does wgmma (wgmma.cuh)
// give exactly the mma.sync chain, for the attention tile's two products (Q K^T from zero, P V onto
// the rescaled O), with A from shared memory or registers, and the prefill kernel's 64-position
// scores by m64n64k16? Needs a GPU. mma_order_probe --wgmma asks (4) alone.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/gemm_order.cuh"
#include "backend/cuda/ops.h"
#include "backend/cuda/wgmma.cuh"
#include "gpu_check.h"  // tests/gpu: CHECK_CUDA, CHECK_LT, time_ms, cu, bf16

namespace {

using tf::gpu_check::download;
using tf::gpu_check::time_ms;
using tf::gpu_check::upload;

using tf::backend::cuda::gemm::mma16816;

__device__ __forceinline__ uint32_t pack(bf16 lo, bf16 hi) {
  return uint32_t(__bfloat16_as_ushort(lo)) | (uint32_t(__bfloat16_as_ushort(hi)) << 16);
}

// (1) One mma per warp: a[16][16], b[8][16] (n-major), c[16][8]; logical k = i reads element
// perm[i] of a's rows and b's columns.
__global__ void one_mma(const bf16* a, const bf16* b, const float* c, const int* perm, float* d) {
  const int trial = blockIdx.x, lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  a += trial * 256;
  b += trial * 128;
  c += trial * 128;
  d += trial * 128;
  auto A = [&](int r, int k) { return a[r * 16 + perm[k]]; };
  auto B = [&](int n, int k) { return b[n * 16 + perm[k]]; };
  float acc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t],
                  c[(g + 8) * 8 + 2 * t + 1]};
  mma16816(acc, pack(A(g, 2 * t), A(g, 2 * t + 1)), pack(A(g + 8, 2 * t), A(g + 8, 2 * t + 1)),
           pack(A(g, 2 * t + 8), A(g, 2 * t + 9)), pack(A(g + 8, 2 * t + 8), A(g + 8, 2 * t + 9)),
           pack(B(g, 2 * t), B(g, 2 * t + 1)), pack(B(g, 2 * t + 8), B(g, 2 * t + 9)));
  d[g * 8 + 2 * t] = acc[0];
  d[g * 8 + 2 * t + 1] = acc[1];
  d[(g + 8) * 8 + 2 * t] = acc[2];
  d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}

// (2) Reference: y[m][n] (+)= chain over natural k16 blocks of x[m][k0..k0+K) . w[n][..], one warp
// per 16 x 8 tile, from zero or from y's current value.
__global__ void chain_ref(const bf16* x, const bf16* w, float* y, int m, int n, int ld, int k0,
                          int k, bool accumulate) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  const int r0 = blockIdx.y * 16, c0 = blockIdx.x * 8;
  float acc[4] = {0, 0, 0, 0};
  auto X = [&](int r, int kk) {
    const int rr = r0 + r < m ? r0 + r : m - 1;
    return *reinterpret_cast<const uint32_t*>(x + size_t(rr) * ld + kk);
  };
  auto W = [&](int c, int kk) {
    return *reinterpret_cast<const uint32_t*>(w + size_t(c0 + c) * ld + kk);
  };
  for (int kb = k0; kb < k0 + k; kb += 16) {
    mma16816(acc, X(g, kb + 2 * t), X(g + 8, kb + 2 * t), X(g, kb + 2 * t + 8),
             X(g + 8, kb + 2 * t + 8), W(g, kb + 2 * t), W(g, kb + 2 * t + 8));
  }
  const int rows[4] = {r0 + g, r0 + g, r0 + g + 8, r0 + g + 8};
  for (int i = 0; i < 4; ++i) {
    if (rows[i] >= m) continue;
    float* p = y + size_t(rows[i]) * n + c0 + 2 * t + (i & 1);
    *p = accumulate ? __fadd_rn(*p, acc[i]) : acc[i];
  }
}

// Reference for (4): y[m][n] = the natural k16 mma chain of x[m][0..k) . w[n][..] started from
// c[m][n] (what an mma chain onto an accumulator holds), one warp per 16 x 8 tile.
__global__ void chain_from(const bf16* x, const bf16* w, const float* c, float* y, int n, int k) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  const int r0 = blockIdx.y * 16, c0 = blockIdx.x * 8;
  const int rows[4] = {r0 + g, r0 + g, r0 + g + 8, r0 + g + 8};
  float acc[4];
  for (int i = 0; i < 4; ++i) acc[i] = c[size_t(rows[i]) * n + c0 + 2 * t + (i & 1)];
  auto X = [&](int r, int kk) {
    return *reinterpret_cast<const uint32_t*>(x + size_t(r) * k + kk);
  };
  auto W = [&](int col, int kk) {
    return *reinterpret_cast<const uint32_t*>(w + size_t(c0 + col) * k + kk);
  };
  for (int kb = 0; kb < k; kb += 16) {
    mma16816(acc, X(r0 + g, kb + 2 * t), X(r0 + g + 8, kb + 2 * t), X(r0 + g, kb + 2 * t + 8),
             X(r0 + g + 8, kb + 2 * t + 8), W(g, kb + 2 * t), W(g, kb + 2 * t + 8));
  }
  for (int i = 0; i < 4; ++i) y[size_t(rows[i]) * n + c0 + 2 * t + (i & 1)] = acc[i];
}

// Element offset of (row, 16-byte chunk) of a `rows`-row operand stored as core matrices (8 rows
// of 16 bytes), chunk-major: core matrices adjacent in rows are 128 bytes apart, in chunks
// rows * 16 bytes.
__host__ __device__ int core_off(int row, int chunk, int rows) {
  return ((chunk * (rows / 8) + row / 8) * 8 + row % 8) * 8;
}

// Copies a row-major [rows][cols] bf16 matrix into core matrices (whole block).
__device__ void to_core(bf16* dst, const bf16* src, int rows, int cols) {
  for (int i = threadIdx.x; i < rows * cols / 8; i += blockDim.x) {
    const int r = i / (cols / 8), ch = i % (cols / 8);
    *reinterpret_cast<uint4*>(dst + core_off(r, ch, rows)) =
        *reinterpret_cast<const uint4*>(src + r * cols + ch * 8);
  }
}

// The warp's mma.sync A fragment of rows [16 w, 16 w + 16), k [16 ks, 16 ks + 16) of a[64][k].
__device__ void a_frag(uint32_t (&f)[4], const bf16* a, int k, int ks) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  auto at = [&](int r, int kk) {
    return *reinterpret_cast<const uint32_t*>(a + (16 * w + r) * k + 16 * ks + kk);
  };
  f[0] = at(g, 2 * t);
  f[1] = at(g + 8, 2 * t);
  f[2] = at(g, 2 * t + 8);
  f[3] = at(g + 8, 2 * t + 8);
}

// Writes a warpgroup's m64nN f32 fragment d (N / 8 column blocks of mma.sync C fragments).
template <int N>
__device__ void store_frag(const float (&d)[N / 8][4], float* y) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  for (int j = 0; j < N / 8; ++j) {
    for (int r = 0; r < 4; ++r) {
      y[(16 * w + g + 8 * (r >> 1)) * N + 8 * j + 2 * t + (r & 1)] = d[j][r];
    }
  }
}

// (4a) S[64][N] = q[64][128] k[N][128]^T from zero, by 8 wgmma k16 steps; A from shared memory
// (a_regs false) or registers. Each descriptor's leading offset is the bytes between core matrices
// adjacent in K (8 or N x 16 here), its stride offset between those adjacent in M or N (128): the
// other reading made the first run read past the operands. N = 64 (the prefill kernel's stage of
// two tiles) runs m64n64k16, A from shared memory only.
template <int N>
__global__ void wg_scores(const bf16* q, const bf16* k, float* s, bool a_regs) {
  __shared__ alignas(128) bf16 sq[64 * 128], sk[N * 128];
  to_core(sq, q, 64, 128);
  to_core(sk, k, N, 128);
  tf::backend::cuda::wgmma::fence_shared();
  __syncthreads();
  namespace wg = tf::backend::cuda::wgmma;
  float d[N / 32][4][4] = {};
  uint32_t fa[8][4];
  for (int ks = 0; ks < 8; ++ks) a_frag(fa[ks], q, 128, ks);
  wg::fence();
  auto a_at = [&](int ks) { return wg::smem_desc(sq + core_off(0, 2 * ks, 64), 1024, 128); };
  auto b_at = [&](int ks) { return wg::smem_desc(sk + core_off(0, 2 * ks, N), N * 16, 128); };
  if constexpr (N == 64) {
    wg::m64n64k16<false>(d, a_at(0), b_at(0));
    for (int ks = 1; ks < 8; ++ks) wg::m64n64k16<true>(d, a_at(ks), b_at(ks));
  } else {
    for (int ks = 0; ks < 8; ++ks) {
      if (a_regs) {
        wg::m64n32k16(d[0], fa[ks], b_at(ks), ks > 0);
      } else {
        wg::m64n32k16(d[0], a_at(ks), b_at(ks), ks > 0);
      }
    }
  }
  wg::commit();
  wg::wait<0>();
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  for (int h = 0; h < N / 32; ++h) {
    for (int j = 0; j < 4; ++j) {
      for (int r = 0; r < 4; ++r) {
        s[(16 * w + g + 8 * (r >> 1)) * N + 32 * h + 8 * j + 2 * t + (r & 1)] = d[h][j][r];
      }
    }
  }
}

// (4b) O[64][128] = c + p[64][32] v[32][128], 2 wgmma k16 steps, P from registers, V MN-major:
// core matrices of 8 positions (K) x 8 dims (N), K-adjacent ones 128 bytes apart, N-adjacent 512.
__global__ void wg_pv(const bf16* p, const bf16* v, const float* c, float* o) {
  __shared__ alignas(128) bf16 sv[32 * 128];
  to_core(sv, v, 32, 128);  // core matrices of 8 positions x 8 dims
  tf::backend::cuda::wgmma::fence_shared();
  __syncthreads();
  namespace wg = tf::backend::cuda::wgmma;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  float d[16][4];
  for (int j = 0; j < 16; ++j) {
    for (int r = 0; r < 4; ++r)
      d[j][r] = c[(16 * w + g + 8 * (r >> 1)) * 128 + 8 * j + 2 * t + (r & 1)];
  }
  uint32_t fa[2][4];
  for (int kk = 0; kk < 2; ++kk) a_frag(fa[kk], p, 32, kk);
  wg::fence();
  for (int kk = 0; kk < 2; ++kk) {
    wg::m64n128k16_bt(d, fa[kk], wg::smem_desc(sv + core_off(16 * kk, 0, 32), 128, 512), true);
  }
  wg::commit();
  wg::wait<0>();
  store_frag<128>(d, o);
}

__global__ void to_bf16(const float* y, bf16* out, size_t count) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(y[i]);
}

// Random bf16 with exponents spread over 2^-e..2^e and both signs, so cancellation is common.
std::vector<bf16> spread(size_t n, std::mt19937& rng, int e) {
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-e, e), sign(0, 1);
  std::vector<bf16> v(n);
  for (auto& x : v)
    x = __float2bfloat16((sign(rng) ? -1.0f : 1.0f) * std::ldexp(mant(rng), ex(rng)));
  return v;
}

size_t count_diff(const std::vector<float>& a, const std::vector<float>& b) {
  size_t d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += std::memcmp(&a[i], &b[i], 4) != 0;
  return d;
}

struct Lt {
  cublasLtHandle_t h;
  cu::DeviceBuffer ws{size_t(64) << 20};
  Lt() { CHECK_LT(cublasLtCreate(&h)); }
};

int cfg(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  int v = 0;
  size_t got = 0;
  uint32_t u = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &u, sizeof(u), &got) ==
      CUBLAS_STATUS_SUCCESS)
    v = int(u);
  return v;
}

// One cuBLASLt problem: D[m][n] (f32 or bf16, ld n) = x[m][k0..k0+k) . w[n][..]^T + beta C, where
// x and w have row length ld. Column-major: D^T = W^T(op T) . X^T.
struct Plan {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  // A fixed array: nvcc 13.0 crashes on std::vector of this type.
  cublasLtMatmulHeuristicResult_t algos[16];
  int count = 0;
};

Plan plan(Lt& lt, int m, int n, int k, int ld, cudaDataType out) {
  Plan p;
  CHECK_LT(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  CHECK_LT(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  CHECK_LT(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  CHECK_LT(cublasLtMatrixLayoutCreate(&p.la, CUDA_R_16BF, k, n, ld));
  CHECK_LT(cublasLtMatrixLayoutCreate(&p.lb, CUDA_R_16BF, k, m, ld));
  CHECK_LT(cublasLtMatrixLayoutCreate(&p.lc, out, n, m, n));
  cublasLtMatmulPreference_t pref;
  CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
  size_t wsb = lt.ws.bytes();
  CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &wsb, sizeof(wsb)));
  CHECK_LT(cublasLtMatmulAlgoGetHeuristic(lt.h, p.op, p.la, p.lb, p.lc, p.lc, pref, 16, p.algos,
                                          &p.count));
  return p;
}

void run(Lt& lt, const Plan& p, const cublasLtMatmulAlgo_t& algo, const bf16* x, const bf16* w,
         void* d, float beta, cudaStream_t s = 0) {
  const float alpha = 1.0f;
  CHECK_LT(cublasLtMatmul(lt.h, p.op, &alpha, w, p.la, x, p.lb, &beta, d, p.lc, d, p.lc, &algo,
                          lt.ws.get(), lt.ws.bytes(), s));
}

bool no_split(const cublasLtMatmulAlgo_t& a) {
  return cfg(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) <= 1;
}

struct Shape {
  int m, n, k;
};
struct Mat {
  const char* name;
  int n, k;
};

}  // namespace

int main(int argc, char** argv) {
  // --wgmma: question (4) alone.
  const bool wgmma_only = argc > 1 && std::strcmp(argv[1], "--wgmma") == 0;
  std::mt19937 rng(7);
  // ---- (1) order inside one mma.
  if (!wgmma_only) {
    const int trials = 20000;
    const auto a = spread(size_t(trials) * 256, rng, 12), b = spread(size_t(trials) * 128, rng, 12);
    std::vector<float> c(size_t(trials) * 128);
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto& v : c) v = std::ldexp(u(rng), int(u(rng) * 20));
    auto da = upload(a), db = upload(b), dc = upload(c);
    cu::DeviceBuffer dd(c.size() * 4);
    std::vector<std::vector<int>> perms = {
        {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
        {7, 6, 5, 4, 3, 2, 1, 0, 8, 9, 10, 11, 12, 13, 14, 15},   // within the first half
        {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7},   // halves swapped
        {15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0},   // reversed
        {0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15}};  // interleaved
    std::vector<int> r(16);
    for (int i = 0; i < 16; ++i) r[i] = i;
    for (int i = 0; i < 4; ++i) {
      std::shuffle(r.begin(), r.end(), rng);
      perms.push_back(r);
    }
    std::vector<float> base;
    for (size_t pi = 0; pi < perms.size(); ++pi) {
      auto dp = upload(perms[pi]);
      one_mma<<<trials, 32>>>(da.get<bf16>(), db.get<bf16>(), dc.get<float>(), dp.get<int>(),
                              dd.get<float>());
      CHECK_CUDA(cudaGetLastError());
      const auto got = download<float>(dd, c.size());
      if (pi == 0) {
        base = got;
        continue;
      }
      std::printf("(1) k-permutation %zu inside one mma: %zu of %zu results differ from natural\n",
                  pi, count_diff(got, base), got.size());
    }
  }

  // ---- (4) wgmma against the natural chain: the attention tile's two products.
  for (int trial = 0; trial < 4; ++trial) {
    const auto q = spread(64 * 128, rng, 6), k = spread(64 * 128, rng, 6);
    const auto v = spread(32 * 128, rng, 6);
    std::vector<bf16> p(64 * 32), vt(128 * 32);
    std::uniform_real_distribution<float> u01(0, 1), u(-1, 1);
    for (auto& x : p) x = __float2bfloat16(u01(rng));
    for (int r = 0; r < 32; ++r) {
      for (int c = 0; c < 128; ++c) vt[c * 32 + r] = v[r * 128 + c];
    }
    std::vector<float> c(64 * 128), zero(64 * 64, 0.0f);
    for (auto& x : c) x = std::ldexp(u(rng), int(u(rng) * 8));
    auto dq = upload(q), dk = upload(k), dv = upload(v), dp = upload(p), dvt = upload(vt);
    auto dc = upload(c), dz = upload(zero);
    cu::DeviceBuffer ref_s(64 * 32 * 4), ref_s64(64 * 64 * 4), ref_o(64 * 128 * 4),
        got_s(64 * 64 * 4), got_o(64 * 128 * 4);
    chain_from<<<dim3(32 / 8, 4), 32>>>(dq.get<bf16>(), dk.get<bf16>(), dz.get<float>(),
                                        ref_s.get<float>(), 32, 128);
    chain_from<<<dim3(64 / 8, 4), 32>>>(dq.get<bf16>(), dk.get<bf16>(), dz.get<float>(),
                                        ref_s64.get<float>(), 64, 128);
    chain_from<<<dim3(128 / 8, 4), 32>>>(dp.get<bf16>(), dvt.get<bf16>(), dc.get<float>(),
                                         ref_o.get<float>(), 128, 32);
    const auto want_s = download<float>(ref_s, 64 * 32), want_o = download<float>(ref_o, 64 * 128);
    for (const bool regs : {false, true}) {
      CHECK_CUDA(cudaMemset(got_s.get(), 0xff, got_s.bytes()));
      wg_scores<32><<<1, 128>>>(dq.get<bf16>(), dk.get<bf16>(), got_s.get<float>(), regs);
      CHECK_CUDA(cudaDeviceSynchronize());
      std::printf(
          "(4a) trial %d Q.K^T 64x32x128 from zero, A from %s: %zu of %zu differ from the "
          "mma chain\n",
          trial, regs ? "registers" : "shared memory",
          count_diff(download<float>(got_s, 64 * 32), want_s), want_s.size());
    }
    CHECK_CUDA(cudaMemset(got_s.get(), 0xff, got_s.bytes()));
    wg_scores<64><<<1, 128>>>(dq.get<bf16>(), dk.get<bf16>(), got_s.get<float>(), false);
    CHECK_CUDA(cudaDeviceSynchronize());
    const auto want_s64 = download<float>(ref_s64, 64 * 64);
    std::printf(
        "(4a) trial %d Q.K^T 64x64x128 from zero by m64n64k16: %zu of %zu differ from the mma "
        "chain\n",
        trial, count_diff(download<float>(got_s, 64 * 64), want_s64), want_s64.size());
    CHECK_CUDA(cudaMemset(got_o.get(), 0xff, got_o.bytes()));
    wg_pv<<<1, 128>>>(dp.get<bf16>(), dv.get<bf16>(), dc.get<float>(), got_o.get<float>());
    CHECK_CUDA(cudaDeviceSynchronize());
    std::printf(
        "(4b) trial %d O + P.V 64x128x32 onto O, V MN-major: %zu of %zu differ from the "
        "mma chain\n",
        trial, count_diff(download<float>(got_o, 64 * 128), want_o), want_o.size());
  }

  if (wgmma_only) return 0;

  // ---- (2) cuBLASLt against the natural chain.
  Lt lt;
  for (const Shape sh : {Shape{64, 256, 2048}, Shape{300, 1024, 2048}, Shape{4096, 1024, 2048},
                         Shape{4096, 512, 4096}}) {
    const int m = sh.m, n = sh.n, k = sh.k;
    const auto x = spread(size_t(m) * k, rng, 6), w = spread(size_t(n) * k, rng, 6);
    auto dx = upload(x), dw = upload(w);
    cu::DeviceBuffer ref(size_t(m) * n * 4), got(size_t(m) * n * 4);
    const dim3 grid(n / 8, (m + 15) / 16);
    chain_ref<<<grid, 32>>>(dx.get<bf16>(), dw.get<bf16>(), ref.get<float>(), m, n, k, 0, k, false);
    const auto want = download<float>(ref, size_t(m) * n);
    Plan p = plan(lt, m, n, k, k, CUDA_R_32F);
    for (int ai = 0; ai < p.count; ++ai) {
      const auto& res = p.algos[ai];
      CHECK_CUDA(cudaMemset(got.get(), 0xff, got.bytes()));
      run(lt, p, res.algo, dx.get<bf16>(), dw.get<bf16>(), got.get(), 0.0f);
      CHECK_CUDA(cudaDeviceSynchronize());
      std::printf(
          "(2) M=%d N=%d K=%d algo id %d tile %d stages %d splitK %d red %d swizzle %d cta %d "
          "cluster %d: %zu of %zu differ from the natural mma chain\n",
          m, n, k, cfg(res.algo, CUBLASLT_ALGO_CONFIG_ID),
          cfg(res.algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
          cfg(res.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
          cfg(res.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
          cfg(res.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
          cfg(res.algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
          cfg(res.algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION),
          cfg(res.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID),
          count_diff(download<float>(got, size_t(m) * n), want), want.size());
    }
    // Two parts chained through beta = 1 against ref(part 0) then += ref(part 1).
    if (k >= 4096) {
      const int half = k / 2;
      chain_ref<<<grid, 32>>>(dx.get<bf16>(), dw.get<bf16>(), ref.get<float>(), m, n, k, 0, half,
                              false);
      chain_ref<<<grid, 32>>>(dx.get<bf16>(), dw.get<bf16>(), ref.get<float>(), m, n, k, half, half,
                              true);
      const auto want2 = download<float>(ref, size_t(m) * n);
      Plan ph = plan(lt, m, n, half, k, CUDA_R_32F);
      for (int ai = 0; ai < ph.count; ++ai) {
        const auto& res = ph.algos[ai];
        if (!no_split(res.algo)) continue;
        run(lt, ph, res.algo, dx.get<bf16>(), dw.get<bf16>(), got.get(), 0.0f);
        run(lt, ph, res.algo, dx.get<bf16>() + half, dw.get<bf16>() + half, got.get(), 1.0f);
        CHECK_CUDA(cudaDeviceSynchronize());
        std::printf("(2b) two parts via beta=1, algo id %d tile %d: %zu of %zu differ\n",
                    cfg(res.algo, CUBLASLT_ALGO_CONFIG_ID),
                    cfg(res.algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
                    count_diff(download<float>(got, size_t(m) * n), want2), want2.size());
      }
    }
  }

  // ---- (3) speed: Llama-3.1-8B prefill matrices, ours vs cuBLASLt whole vs cuBLASLt by parts.
  const Mat mats[] = {
      {"qkv", 6144, 4096}, {"o", 4096, 4096}, {"gate_up", 28672, 4096}, {"down", 4096, 14336}};
  const int kMaxM = 4096;
  cu::DeviceBuffer x(size_t(kMaxM) * 14336 * 2), w(size_t(28672) * 4096 * 2),
      yb(size_t(kMaxM) * 28672 * 2), yf(size_t(kMaxM) * 28672 * 4);
  {
    const auto hx = tf::gpu_check::random_bf16(size_t(kMaxM) * 14336, rng, 1.0f);
    CHECK_CUDA(cudaMemcpy(x.get(), hx.data(), x.bytes(), cudaMemcpyHostToDevice));
    const auto hw = tf::gpu_check::random_bf16(size_t(28672) * 4096, rng, 0.02f);
    CHECK_CUDA(cudaMemcpy(w.get(), hw.data(), w.bytes(), cudaMemcpyHostToDevice));
  }
  std::printf(
      "\n(3) TFLOP/s: ours (tiled) | cuBLASLt whole K best | cuBLASLt by canonical parts, f32 "
      "chained, no split-K | parts + bf16 convert; and whether parts match ours bitwise\n");
  for (int m : {64, 128, 512, 4096}) {
    for (const Mat& mat : mats) {
      const double flops = 2.0 * m * mat.n * double(mat.k);
      const float t_ours = time_ms(
          [&] {
            CHECK_CUDA(
                cu::matmul(x.get<bf16>(), w.get<bf16>(), yb.get<bf16>(), m, mat.n, mat.k, 0));
          },
          10);
      Plan whole = plan(lt, m, mat.n, mat.k, mat.k, CUDA_R_16BF);
      const float t_whole = time_ms(
          [&] {
            run(lt, whole, whole.algos[0].algo, x.get<bf16>(), w.get<bf16>(), yb.get(), 0.0f);
          },
          10);
      const int part = tf::backend::cuda::gemm::part_len(mat.k, mat.n);
      const int parts = mat.k / part;  // whole parts for these shapes
      Plan pp = plan(lt, m, mat.n, part, mat.k, CUDA_R_32F);
      int pick = -1;
      for (int i = 0; i < pp.count; ++i)
        if (no_split(pp.algos[i].algo)) {
          pick = i;
          break;
        }
      if (pick < 0) {
        std::printf("%-5d %-8s no split-free algo\n", m, mat.name);
        continue;
      }
      auto by_parts = [&] {
        for (int q = 0; q < parts; ++q)
          run(lt, pp, pp.algos[pick].algo, x.get<bf16>() + q * part, w.get<bf16>() + q * part,
              yf.get(), q ? 1.0f : 0.0f);
      };
      const float t_parts = time_ms(by_parts, 10);
      const size_t count = size_t(m) * mat.n;
      const float t_conv = time_ms(
          [&] {
            by_parts();
            to_bf16<<<132 * 8, 256>>>(yf.get<float>(), yb.get<bf16>(), count);
          },
          10);
      // Bitwise: ours (f32 out) vs parts.
      cu::DeviceBuffer ours(count * 4);
      CHECK_CUDA(cu::matmul(x.get<bf16>(), w.get<bf16>(), ours.get<float>(), m, mat.n, mat.k, 0));
      by_parts();
      const size_t diff = count_diff(download<float>(ours, count), download<float>(yf, count));
      std::printf(
          "%-5d %-8s %8.0f | %8.0f | %8.0f (algo %d tile %d) | %8.0f | ours vs parts: %zu of %zu "
          "differ\n",
          m, mat.name, flops / t_ours / 1e9, flops / t_whole / 1e9, flops / t_parts / 1e9,
          cfg(pp.algos[pick].algo, CUBLASLT_ALGO_CONFIG_ID),
          cfg(pp.algos[pick].algo, CUBLASLT_ALGO_CONFIG_TILE_ID), flops / t_conv / 1e9, diff,
          count);
    }
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  return 0;
}
