// H200 bench of the CUDA backend on random bf16 weights with Llama-3.1-8B's shapes: every figure
// printed next to its floor (measured copy bandwidth, cuBLASLt bf16 peak). Needs a GPU.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/gemm_lt.h"
#include "backend/cuda/ops.h"
#include "gpu_check.h"  // tests/gpu: CHECK_CUDA, CHECK_LT, time_ms, cu, bf16

namespace {

// Llama-3.1-8B.
constexpr int kHidden = 4096, kFfn = 14336, kLayers = 32, kHeads = 32, kKvHeads = 8, kHeadDim = 128,
              kVocab = 128256;
constexpr int kQkv = (kHeads + 2 * kKvHeads) * kHeadDim;

using tf::gpu_check::fill;

using tf::gpu_check::Lt;
using tf::gpu_check::time_ms;

// A plain streaming read of n 16-byte units (4 in flight per thread), for the anatomy of a one-row
// matmul's time; the sink write never happens but keeps the loads alive.
__global__ void read_kernel(const uint4* __restrict__ p, size_t n, uint32_t* sink) {
  uint32_t acc = 0;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = __ldcs(p + i), b = __ldcs(p + i + stride), c = __ldcs(p + i + 2 * stride),
                d = __ldcs(p + i + 3 * stride);
    acc ^= a.x ^ b.y ^ c.z ^ d.w;
  }
  for (; i < n; i += stride) acc ^= __ldcs(p + i).x;
  if (acc == 0x9e3779b9u) *sink = acc;
}
__global__ void empty_kernel() {}
// The same bytes in the decode kernel's order: warp w streams rows 8w..8w+7 along K, one 64-byte
// chunk of each row per step (lane g*4+t: unit t of row g), 4 steps in flight.
__global__ void strip_read(const uint4* __restrict__ p, int k_units, uint32_t* sink) {
  const int lane = threadIdx.x & 31, warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const uint4* row = p + (size_t(warp) * 8 + (lane >> 2)) * k_units + (lane & 3);
  uint32_t acc = 0;
  for (int c = 0; c + 12 < k_units; c += 16) {
    const uint4 a = __ldcs(row + c), b = __ldcs(row + c + 4), d = __ldcs(row + c + 8),
                e = __ldcs(row + c + 12);
    acc ^= a.x ^ b.y ^ d.z ^ e.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}
// The same bytes as a K-major (transposed, [K][N]) matrix: block x owns 512 bytes of every K row,
// blockIdx.y a K range, warps take alternate rows: the grid sweeps K rows in order.
__global__ void kmajor_read(const uint4* __restrict__ p, int n_units, int k_rows, uint32_t* sink) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int k_per = k_rows / gridDim.y, k0 = blockIdx.y * k_per;
  const uint4* col = p + size_t(blockIdx.x) * 32 + lane;
  uint32_t acc = 0;
  for (int k = k0 + warp; k + 3 * warps < k0 + k_per; k += 4 * warps) {
    const uint4 a = __ldcs(col + size_t(k) * n_units),
                b = __ldcs(col + size_t(k + warps) * n_units),
                d = __ldcs(col + size_t(k + 2 * warps) * n_units),
                e = __ldcs(col + size_t(k + 3 * warps) * n_units);
    acc ^= a.x ^ b.y ^ d.z ^ e.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

// A captured graph of fn on a capture stream, replayed on the legacy stream.
struct Graph {
  cudaGraphExec_t exec = nullptr;
  explicit Graph(const std::function<void(cudaStream_t)>& fn) {
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t g;
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    fn(s);
    CHECK_CUDA(cudaStreamEndCapture(s, &g));
    CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
    CHECK_CUDA(cudaGraphDestroy(g));
    CHECK_CUDA(cudaStreamDestroy(s));
  }
  void launch() const { CHECK_CUDA(cudaGraphLaunch(exec, 0)); }
};

struct Mat {
  const char* name;
  int n, k;
};
const Mat kMats[] = {{"qkv", kQkv, kHidden},
                     {"o", kHidden, kHidden},
                     {"gate_up", 2 * kFfn, kHidden},
                     {"down", kHidden, kFfn}};

}  // namespace

int main() {
  // As the decoder runs (tune_device), unless TF_L2_FETCH asks for another L2 fetch granularity.
  CHECK_CUDA(cu::tune_device());
  if (const char* g = std::getenv("TF_L2_FETCH")) {
    CHECK_CUDA(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, std::atoi(g)));
    size_t v = 0;
    CHECK_CUDA(cudaDeviceGetLimit(&v, cudaLimitMaxL2FetchGranularity));
    std::printf("L2 fetch granularity %zu\n", v);
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);

  // 1. Copy bandwidth (bytes read + written), the floor for weight streaming.
  double copy_bw;
  {
    const size_t bytes = size_t(4) << 30;
    cu::DeviceBuffer a(bytes), b(bytes);
    fill(a.get<bf16>(), bytes / 2, 1, 1.0f);
    const float ms = time_ms(
        [&] { CHECK_CUDA(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice)); },
        20);
    copy_bw = 2.0 * bytes / (ms * 1e-3);
  }
  // 2. cuBLASLt bf16 peak, 8192^3 on random data.
  Lt lt;
  double peak;
  {
    const int s = 8192;
    cu::DeviceBuffer x(size_t(s) * s * 2), w(size_t(s) * s * 2), y(size_t(s) * s * 2);
    fill(x.get<bf16>(), size_t(s) * s, 2, 1.0f);
    fill(w.get<bf16>(), size_t(s) * s, 3, 1.0f);
    auto run = lt.plan(x.get<bf16>(), w.get<bf16>(), y.get<bf16>(), s, s, s);
    const float ms = time_ms([&] { run(0); }, 20);
    peak = 2.0 * s * s * double(s) / (ms * 1e-3);
  }
  std::printf("copy bandwidth %.0f GB/s, cuBLASLt bf16 peak %.0f TFLOP/s\n", copy_bw / 1e9,
              peak / 1e12);

  // 3. All of the 8B's weights (about 15 GB), so a decode step streams them from HBM, not L2.
  std::vector<cu::DeviceBuffer> weights;
  double step_bytes = 0;
  for (int l = 0; l < kLayers; ++l)
    for (const Mat& m : kMats) {
      weights.emplace_back(size_t(m.n) * m.k * 2);
      fill(weights.back().get<bf16>(), size_t(m.n) * m.k, 100 + weights.size(), 0.02f);
      step_bytes += double(m.n) * m.k * 2;
    }
  cu::DeviceBuffer lm_head(size_t(kVocab) * kHidden * 2);
  fill(lm_head.get<bf16>(), size_t(kVocab) * kHidden, 7, 0.02f);
  step_bytes += double(kVocab) * kHidden * 2;
  const int kMaxM = 4096;
  cu::DeviceBuffer x(size_t(kMaxM) * kFfn * 2), y(size_t(kMaxM) * 2 * kFfn * 4),
      logits(size_t(128) * kVocab * 4);
  fill(x.get<bf16>(), size_t(kMaxM) * kFfn, 9, 1.0f);
  CHECK_CUDA(cudaDeviceSynchronize());
  const double floor_tok = copy_bw / step_bytes;
  // Milliseconds for one matrix of every layer (a graph of 32 launches of `mm`).
  auto layers_ms = [&](int mi, auto&& mm) {
    const Mat& mat = kMats[mi];
    Graph g([&](cudaStream_t s) {
      for (int l = 0; l < kLayers; ++l) {
        CHECK_CUDA(mm(weights[l * 4 + mi].get<bf16>(), mat.n, mat.k, s));
      }
    });
    return time_ms([&] { g.launch(); }, 10);
  };

  std::printf(
      "\nweight streaming (matmul, small-M path), all 32 layers, GB/s of weights read; floor = "
      "copy bw\n");
  std::printf("%-8s %10s", "matrix", "MB/layer");
  const int ms_list[] = {1, 8, 32, 64};
  for (int m : ms_list) std::printf("   M=%-3d GB/s", m);
  std::printf("\n");
  for (int mi = 0; mi < 4; ++mi) {
    const Mat& mat = kMats[mi];
    std::printf("%-8s %10.1f", mat.name, mat.n * double(mat.k) * 2 / 1e6);
    for (int m : ms_list) {
      const float t = layers_ms(mi, [&](const bf16* w, int n, int k, cudaStream_t s) {
        return cu::matmul(x.get<bf16>(), w, y.get<bf16>(), m, n, k, s);
      });
      std::printf("   %11.0f", kLayers * mat.n * double(mat.k) * 2 / (t * 1e-3) / 1e9);
    }
    std::printf("\n");
  }
  // 3c. The step's other kernels at one row (Llama-3.1-8B shapes, 640 positions of context), us
  // per launch in graphs of 32: what a batch-1 step spends besides the matmuls.
  {
    const int ctx = 640, bs = 16, width = 64, hd = kHeadDim;
    const size_t kv_elems = size_t(width + 1) * bs * kKvHeads * hd;
    cu::DeviceBuffer resid(kHidden * 4), delta(kHidden * 4), normw(kHidden * 2), h(kHidden * 2),
        qkv(kQkv * 4), q(kHeads * hd * 2), kc(kv_elems * 2), vc(kv_elems * 2), att(kHeads * hd * 2),
        gu(size_t(2) * kFfn * 4), act(size_t(kFfn) * 2), emb(size_t(1024) * kHidden * 2);
    fill(normw.get<bf16>(), kHidden, 11, 1.0f);
    fill(kc.get<bf16>(), kv_elems, 12, 1.0f);
    fill(vc.get<bf16>(), kv_elems, 13, 1.0f);
    fill(emb.get<bf16>(), size_t(1024) * kHidden, 14, 1.0f);
    CHECK_CUDA(cudaMemset(resid.get(), 0, resid.bytes()));
    CHECK_CUDA(cudaMemset(delta.get(), 0, delta.bytes()));
    CHECK_CUDA(cudaMemset(qkv.get(), 0, qkv.bytes()));
    CHECK_CUDA(cudaMemset(gu.get(), 0, gu.bytes()));
    std::vector<float> cs(size_t(4096) * hd / 2, 0.5f);
    cu::DeviceBuffer cosb = tf::gpu_check::upload(cs), sinb = tf::gpu_check::upload(cs);
    std::vector<int32_t> table(width), one{0}, last{ctx - 1};
    for (int b = 0; b < width; ++b) table[b] = b;
    std::vector<int64_t> slot{ctx - 1};
    cu::DeviceBuffer tab = tf::gpu_check::upload(table), row_seq = tf::gpu_check::upload(one),
                     pos = tf::gpu_check::upload(last), slots = tf::gpu_check::upload(slot),
                     ids = tf::gpu_check::upload(one);
    const int max_splits = cu::attention_max_splits(width * bs);
    cu::DeviceBuffer scratch(cu::attention_scratch_bytes(1, kHeads, hd, max_splits));
    cu::DeviceBuffer counters(cu::attention_counter_bytes(1, kKvHeads));
    CHECK_CUDA(cudaMemset(counters.get(), 0, counters.bytes()));
    const cu::QkvParams qp{kHeads, kKvHeads, hd, hd, false, 1e-5f};
    cu::QkvTensors qt;
    qt.cos = cosb.get<float>();
    qt.sin = sinb.get<float>();
    qt.pos = pos.get<int32_t>();
    qt.slots = slots.get<int64_t>();
    qt.q_out = q.get<bf16>();
    qt.k_cache = kc.get<bf16>();
    qt.v_cache = vc.get<bf16>();
    cu::AttentionParams ap{kHeads, kKvHeads, hd, bs, width, 0.088f};
    cu::AttentionBatch ab;
    ab.n_split_rows = 1;
    ab.max_splits = max_splits;
    ab.scratch = scratch.get<float>();
    ab.counters = counters.get<int32_t>();
    ab.out = att.get<bf16>();
    auto attention = [&](const int32_t* positions, cudaStream_t s) {
      return cu::paged_attention(q.get<bf16>(), kc.get<bf16>(), vc.get<bf16>(), tab.get<int32_t>(),
                                 row_seq.get<int32_t>(), positions, ap, ab, s);
    };
    struct Op {
      const char* name;
      std::function<cudaError_t(cudaStream_t)> run;
    };
    const Op ops[] = {
        {"embedding",
         [&](cudaStream_t s) {
           return cu::embedding(emb.get<bf16>(), ids.get<int32_t>(), resid.get<float>(), 1, kHidden,
                                s);
         }},
        {"add_rms_norm",
         [&](cudaStream_t s) {
           return cu::add_rms_norm(resid.get<float>(), delta.get<float>(), normw.get<bf16>(),
                                   h.get<bf16>(), 1, kHidden, 1e-5f, s);
         }},
        {"qkv_rope_kv",
         [&](cudaStream_t s) { return cu::qkv_rope_kv_write(qkv.get<float>(), qp, qt, 1, s); }},
        {"attention", [&](cudaStream_t s) { return attention(pos.get<int32_t>(), s); }},
        {"swiglu",
         [&](cudaStream_t s) { return cu::swiglu(gu.get<float>(), act.get<bf16>(), 1, kFfn, s); }},
    };
    std::printf("\nthe step's other kernels at one row (%d positions), us per launch\n", ctx);
    auto per_launch_us = [&](const std::function<cudaError_t(cudaStream_t)>& run) {
      Graph g([&](cudaStream_t s) {
        for (int l = 0; l < kLayers; ++l) CHECK_CUDA(run(s));
      });
      return time_ms([&] { g.launch(); }, 20) * 1e3 / kLayers;
    };
    for (const Op& op : ops) std::printf("%-14s %8.2f\n", op.name, per_launch_us(op.run));
    // The whole one-row step as the decoder enqueues it (32 layers of norm, qkv, rope + KV write,
    // attention, o, norm, gate_up, SwiGLU, down, then lm_head) in one graph: the GPU's side of a
    // batch-1 decode step, without the engine; with the norms and SwiGLU apart and fused into the
    // matmuls next to them (norm_matmul, norm_matmul_swiglu: the decoder's one-row path).
    cu::DeviceBuffer resid2(kHidden * 4);
    CHECK_CUDA(cudaMemset(resid2.get(), 0, resid2.bytes()));
    // The fused step also with kernels launched early (pdl.cuh): rope and attention (2), gate_up
    // and down too (3), o and lm_head too, as the decoder does (4), and qkv as well (5).
    for (const int variant : {0, 1, 2, 3, 4, 5}) {
      const bool fused = variant >= 1, early = variant >= 2;
      const bool early_gu = variant >= 3, early_down = variant >= 3, early_qkv = variant == 5;
      const bool early_o = variant >= 4, early_lm = variant >= 4;
      ab.early = early;
      Graph g([&](cudaStream_t s) {
        float *x = resid.get<float>(), *x_other = resid2.get<float>();
        auto norm_then_matmul = [&](const float* dl, const bf16* w, float* y, int n,
                                    bool early_mm) {
          if (fused) {
            CHECK_CUDA(cu::norm_matmul(x, dl, normw.get<bf16>(), 1e-5f, x_other, w, y, n, kHidden,
                                       s, early_mm));
            std::swap(x, x_other);
            return;
          }
          CHECK_CUDA(
              cu::add_rms_norm(x, dl, normw.get<bf16>(), h.get<bf16>(), 1, kHidden, 1e-5f, s));
          CHECK_CUDA(cu::matmul(h.get<bf16>(), w, y, 1, n, kHidden, s));
        };
        for (int l = 0; l < kLayers; ++l) {
          norm_then_matmul(delta.get<float>(), weights[l * 4].get<bf16>(), qkv.get<float>(), kQkv,
                           early_qkv && l > 0);
          CHECK_CUDA(cu::qkv_rope_kv_write(qkv.get<float>(), qp, qt, 1, s, early));
          CHECK_CUDA(attention(pos.get<int32_t>(), s));
          if (fused) {
            CHECK_CUDA(cu::matmul_row(att.get<bf16>(), weights[l * 4 + 1].get<bf16>(),
                                      delta.get<float>(), kHidden, kHeads * hd, s, early_o));
          } else {
            CHECK_CUDA(cu::matmul(att.get<bf16>(), weights[l * 4 + 1].get<bf16>(),
                                  delta.get<float>(), 1, kHidden, kHeads * hd, s));
          }
          if (fused) {  // SwiGLU stored by gate_up, down reading its row as o does
            CHECK_CUDA(cu::norm_matmul_swiglu(x, delta.get<float>(), normw.get<bf16>(), 1e-5f,
                                              x_other, weights[l * 4 + 2].get<bf16>(),
                                              act.get<bf16>(), kFfn, kHidden, s, early_gu));
            std::swap(x, x_other);
            CHECK_CUDA(cu::matmul_row(act.get<bf16>(), weights[l * 4 + 3].get<bf16>(),
                                      delta.get<float>(), kHidden, kFfn, s, early_down));
          } else {
            norm_then_matmul(delta.get<float>(), weights[l * 4 + 2].get<bf16>(), gu.get<float>(),
                             2 * kFfn, early_gu);
            CHECK_CUDA(cu::swiglu(gu.get<float>(), act.get<bf16>(), 1, kFfn, s));
            CHECK_CUDA(cu::matmul(act.get<bf16>(), weights[l * 4 + 3].get<bf16>(),
                                  delta.get<float>(), 1, kHidden, kFfn, s));
          }
        }
        if (fused) {
          CHECK_CUDA(cu::norm_matmul(x, delta.get<float>(), normw.get<bf16>(), 1e-5f, x_other,
                                     lm_head.get<bf16>(), logits.get<float>(), kVocab, kHidden, s,
                                     early_lm));
        } else {  // as the decoder: the last add, the gather of the out row, its norm
          CHECK_CUDA(cu::add_rms_norm(x, delta.get<float>(), normw.get<bf16>(), h.get<bf16>(), 1,
                                      kHidden, 1e-5f, s));
          CHECK_CUDA(cu::gather_rows(x, row_seq.get<int32_t>(), x_other, 1, kHidden, s));
          CHECK_CUDA(cu::add_rms_norm(x_other, nullptr, normw.get<bf16>(), h.get<bf16>(), 1,
                                      kHidden, 1e-5f, s));
          CHECK_CUDA(cu::matmul(h.get<bf16>(), lm_head.get<bf16>(), logits.get<float>(), 1, kVocab,
                                kHidden, s));
        }
      });
      const float t = time_ms([&] { g.launch(); }, 20);
      const char* names[] = {"",
                             ", row kernels (norms, SwiGLU fused)",
                             ", row kernels, rope and attention early",
                             ", row kernels, rope, attention, gate_up, down early",
                             ", row kernels, all but qkv early (the decoder)",
                             ", row kernels, every kernel early"};
      std::printf("one-row step, all kernels%s: %.3f ms = %.1f tok/s (floor %.1f)\n",
                  names[variant], t, 1e3 / t, floor_tok);
    }
    // What each stage costs inside the decoder's step graph: the same graph with one stage left
    // out, or qkv's norm swapped for a plain row copy. The difference to the full graph is the
    // stage's share of the step, overlaps included (outputs are garbage). Session 17, three
    // runs: rope 0-55 us, attention 135-245, o 228-403 (its bytes at the copy rate: 250), qkv's
    // norm 58-128, lm_head 150-241; SwiGLU computed by down's blocks (before it was gate_up's
    // store) 63-98.
    struct LeaveOut {
      const char* name;
      bool rope = false, attn = false, o = false, norm_qkv = false, lm = false;
    };
    const LeaveOut leave_outs[] = {
        {"none (the decoder)"},
        {"rope", true},
        {"attention", false, true},
        {"rope + attention", true, true},
        {"o", false, false, true},
        {"qkv's norm (copy source)", false, false, false, true},
        {"lm_head", false, false, false, false, true},
    };
    ab.early = true;
    std::printf("\none-row step graph with a stage left out (ms; the stage's cost = difference)\n");
    for (const LeaveOut& v : leave_outs) {
      Graph g([&](cudaStream_t s) {
        float *x = resid.get<float>(), *x_other = resid2.get<float>();
        for (int l = 0; l < kLayers; ++l) {
          if (v.norm_qkv) {
            CHECK_CUDA(cu::matmul_row(att.get<bf16>(), weights[l * 4].get<bf16>(), qkv.get<float>(),
                                      kQkv, kHidden, s));
          } else {
            CHECK_CUDA(cu::norm_matmul(x, delta.get<float>(), normw.get<bf16>(), 1e-5f, x_other,
                                       weights[l * 4].get<bf16>(), qkv.get<float>(), kQkv, kHidden,
                                       s));
            std::swap(x, x_other);
          }
          if (!v.rope) CHECK_CUDA(cu::qkv_rope_kv_write(qkv.get<float>(), qp, qt, 1, s, true));
          if (!v.attn) CHECK_CUDA(attention(pos.get<int32_t>(), s));
          if (!v.o) {
            CHECK_CUDA(cu::matmul_row(att.get<bf16>(), weights[l * 4 + 1].get<bf16>(),
                                      delta.get<float>(), kHidden, kHeads * hd, s, true));
          }
          CHECK_CUDA(cu::norm_matmul_swiglu(x, delta.get<float>(), normw.get<bf16>(), 1e-5f,
                                            x_other, weights[l * 4 + 2].get<bf16>(),
                                            act.get<bf16>(), kFfn, kHidden, s, true));
          std::swap(x, x_other);
          CHECK_CUDA(cu::matmul_row(act.get<bf16>(), weights[l * 4 + 3].get<bf16>(),
                                    delta.get<float>(), kHidden, kFfn, s, true));
        }
        if (!v.lm) {
          CHECK_CUDA(cu::norm_matmul(x, delta.get<float>(), normw.get<bf16>(), 1e-5f, x_other,
                                     lm_head.get<bf16>(), logits.get<float>(), kVocab, kHidden, s,
                                     true));
        }
      });
      std::printf("  without %-30s %.3f ms\n", v.name, time_ms([&] { g.launch(); }, 20));
    }
    ab.early = false;
    // Attention's cost by context length (its fixed part and its slope per 32-position tile),
    // as the decoder runs it (split_tiles_kernel) and without the counters (the dim-split
    // kernel and a combine launch).
    std::printf("attention, us per launch: ctx  split tiles  dim-split + combine\n");
    for (const int c : {1, 32, 128, 256, 640, 1024, 4096}) {
      if (c > width * bs) continue;
      const std::vector<int32_t> at{c - 1};
      cu::DeviceBuffer pos_c = tf::gpu_check::upload(at);
      const float tiles =
          per_launch_us([&](cudaStream_t s) { return attention(pos_c.get<int32_t>(), s); });
      ab.counters = nullptr;
      const float dim_split =
          per_launch_us([&](cudaStream_t s) { return attention(pos_c.get<int32_t>(), s); });
      ab.counters = counters.get<int32_t>();
      std::printf("attention %4d %8.2f %8.2f\n", c, tiles, dim_split);
    }
  }

  // 3a. Where a one-row matmul's time goes, per launch (graphs of 32, one per layer): an empty
  // kernel (launch and graph-step cost), a plain read of the same bytes (132 x 4 blocks of 256),
  // and the matmul.
  {
    cu::DeviceBuffer sink(4);
    std::printf("\none-row matmul anatomy, us per launch: empty kernel, plain read, matmul\n");
    std::printf("%-8s %8s %8s %10s %8s %10s %8s %10s %8s %10s %8s\n", "matrix", "MB", "empty",
                "read", "GB/s", "strip", "GB/s", "k-major", "GB/s", "matmul", "GB/s");
    for (int mi = 0; mi < 4; ++mi) {
      const Mat& mat = kMats[mi];
      const double bytes = double(mat.n) * mat.k * 2;
      const float t_empty = layers_ms(mi, [&](const bf16*, int, int, cudaStream_t s) {
        empty_kernel<<<132 * 4, 256, 0, s>>>();
        return cudaGetLastError();
      });
      const float t_read = layers_ms(mi, [&](const bf16* w, int, int, cudaStream_t s) {
        read_kernel<<<132 * 4, 256, 0, s>>>(reinterpret_cast<const uint4*>(w), size_t(bytes) / 16,
                                            sink.get<uint32_t>());
        return cudaGetLastError();
      });
      const float t_strip = layers_ms(mi, [&](const bf16* w, int n, int k, cudaStream_t s) {
        strip_read<<<n / 32, 128, 0, s>>>(reinterpret_cast<const uint4*>(w), k / 8,
                                          sink.get<uint32_t>());
        return cudaGetLastError();
      });
      const float t_kmajor = layers_ms(mi, [&](const bf16* w, int n, int k, cudaStream_t s) {
        const int ysplit = int(std::bit_floor(unsigned(std::max(8, 1024 / (n / 256)))));
        kmajor_read<<<dim3(n / 256, ysplit), 256, 0, s>>>(reinterpret_cast<const uint4*>(w), n / 8,
                                                          k, sink.get<uint32_t>());
        return cudaGetLastError();
      });
      const float t_mm = layers_ms(mi, [&](const bf16* w, int n, int k, cudaStream_t s) {
        return cu::matmul(x.get<bf16>(), w, y.get<float>(), 1, n, k, s);
      });
      auto us = [](float ms) { return ms * 1e3 / kLayers; };
      auto gbs = [&](float ms) { return kLayers * bytes / (ms * 1e-3) / 1e9; };
      std::printf("%-8s %8.1f %8.2f %10.2f %8.0f %10.2f %8.0f %10.2f %8.0f %10.2f %8.0f\n",
                  mat.name, bytes / 1e6, us(t_empty), us(t_read), gbs(t_read), us(t_strip),
                  gbs(t_strip), us(t_kmajor), gbs(t_kmajor), us(t_mm), gbs(t_mm));
    }
  }

  // 3b. The small-M kernel's launch shapes (every one computes the same bits): GB/s per matrix
  // over 32 layers, and the four matrices' total; the table above is launch_matmul's pick.
  std::printf("\nsmall-M shapes: GB/s of weights per matrix (32 layers), and all four together\n");
  std::printf("%-4s %-14s %8s %8s %8s %8s %10s\n", "M", "shape", "qkv", "o", "gate_up", "down",
              "all4 GB/s");
  for (int m : {1, 8, 16, 32, 64, 128}) {
    for (int sh = 0; sh < cu::small_m_shapes(m); ++sh) {
      std::printf("%-4d %-14s", m, cu::small_m_shape_name(m, sh));
      double bytes_all = 0, ms_all = 0;
      for (int mi = 0; mi < 4; ++mi) {
        const Mat& mat = kMats[mi];
        const float t = layers_ms(mi, [&](const bf16* w, int n, int k, cudaStream_t s) {
          return cu::matmul_small_m_shape(x.get<bf16>(), w, y.get<bf16>(), m, n, k, s, sh);
        });
        const double bytes = kLayers * mat.n * double(mat.k) * 2;
        bytes_all += bytes;
        ms_all += t;
        std::printf(" %8.0f", bytes / (t * 1e-3) / 1e9);
      }
      std::printf(" %10.0f\n", bytes_all / (ms_all * 1e-3) / 1e9);
    }
  }

  // 3c. The one-row kernels' launch shapes (gemm_row.cu, the x row staged in shared memory) with
  // the plain-copy source and with the fused norm's (the matrices whose K is the hidden size):
  // GB/s of weights per matrix over 32 layers.
  {
    cu::DeviceBuffer resid(kHidden * 4), resid_out(kHidden * 4), normw(kHidden * 2);
    CHECK_CUDA(cudaMemset(resid.get(), 0, resid.bytes()));
    CHECK_CUDA(cudaMemset(normw.get(), 0, normw.bytes()));
    std::printf("\none-row (row kernel) shapes: GB/s of weights per matrix (32 layers)\n");
    std::printf("%-6s %-14s %8s %8s %8s %8s %8s\n", "source", "shape", "qkv", "o", "gate_up",
                "down", "lm_head");
    for (const bool norm : {false, true}) {
      for (int sh = 0; sh < cu::matmul_row_shapes(); ++sh) {
        std::printf("%-6s %-14s", norm ? "norm" : "copy", cu::matmul_row_shape_name(sh));
        for (int mi = 0; mi < 4; ++mi) {
          const Mat& mat = kMats[mi];
          if (norm && mat.k != kHidden) {
            std::printf(" %8s", "-");
            continue;
          }
          const float t = layers_ms(mi, [&](const bf16* w, int n, int k, cudaStream_t s) {
            if (norm) {
              return cu::norm_matmul_shape(resid.get<float>(), nullptr, normw.get<bf16>(), 1e-5f,
                                           resid_out.get<float>(), w, y.get<float>(), n, k, s, sh);
            }
            return cu::matmul_row_shape(x.get<bf16>(), w, y.get<float>(), n, k, s, sh);
          });
          std::printf(" %8.0f", kLayers * mat.n * double(mat.k) * 2 / (t * 1e-3) / 1e9);
        }
        // lm_head: 8 launches a graph (1.05 GB each).
        Graph g([&](cudaStream_t s) {
          for (int i = 0; i < 8; ++i) {
            CHECK_CUDA(norm ? cu::norm_matmul_shape(resid.get<float>(), nullptr, normw.get<bf16>(),
                                                    1e-5f, resid_out.get<float>(),
                                                    lm_head.get<bf16>(), logits.get<float>(),
                                                    kVocab, kHidden, s, sh)
                            : cu::matmul_row_shape(x.get<bf16>(), lm_head.get<bf16>(),
                                                   logits.get<float>(), kVocab, kHidden, s, sh));
          }
        });
        const float t = time_ms([&] { g.launch(); }, 10);
        std::printf(" %8.0f\n", 8 * double(kVocab) * kHidden * 2 / (t * 1e-3) / 1e9);
      }
    }
  }

  // The decoder's matmul: the decode kernels up to 64 rows, cuBLASLt by parts above, f32 out.
  cu::LtGemm gemm;
  CHECK_CUDA(gemm.init());
  std::printf(
      "\ndecode step = 32 x (qkv, o, gate_up, down) + lm_head: %.2f GB of weights, floor %.1f "
      "tok/s per stream\n",
      step_bytes / 1e9, floor_tok);
  std::printf("%-5s %10s %12s %14s %10s %16s %18s %17s\n", "M", "step ms", "GB/s", "tok/s/stream",
              "of floor", "aggregate tok/s", "cuBLASLt step ms", "kernels step ms");
  // A graph of one decode step's matmuls, by the decoder's path, by cuBLASLt alone or by the
  // kernels alone (all give the same bits; the last two columns say where LtGemm::kMinRows
  // belongs).
  bool lt_missing = false;  // cuBLASLt had no split-free algorithm for some matrix: kernels ran
  enum Path { kDecoder, kLtOnly, kKernelsOnly };
  auto step_ms = [&](int m, Path path) {
    auto mm = [&](const bf16* w, float* y, int n, int k, cudaStream_t s) {
      if (path == kKernelsOnly) return cu::matmul(x.get<bf16>(), w, y, m, n, k, s);
      if (path == kLtOnly) {
        const cudaError_t e = gemm.matmul_lt(x.get<bf16>(), w, y, m, n, k, s);
        if (e != cudaErrorNotSupported) return e;
        lt_missing = true;
      }
      return gemm.matmul(x.get<bf16>(), w, y, m, n, k, s);
    };
    Graph g([&](cudaStream_t s) {
      for (int l = 0; l < kLayers; ++l)
        for (int mi = 0; mi < 4; ++mi)
          CHECK_CUDA(
              mm(weights[l * 4 + mi].get<bf16>(), y.get<float>(), kMats[mi].n, kMats[mi].k, s));
      CHECK_CUDA(mm(lm_head.get<bf16>(), logits.get<float>(), kVocab, kHidden, s));
    });
    return time_ms([&] { g.launch(); }, 10);
  };
  for (int m : {1, 2, 4, 6, 8, 16, 32, 48, 64, 96, 128}) {
    lt_missing = false;
    const float t = step_ms(m, kDecoder), t_lt = step_ms(m, kLtOnly),
                t_k = step_ms(m, kKernelsOnly);
    const double tok = 1e3 / t;
    std::printf("%-5d %10.3f %12.0f %14.1f %9.1f%% %16.0f %17.3f%s %17.3f\n", m, t,
                step_bytes / (t * 1e-3) / 1e9, tok, 100.0 * tok / floor_tok, tok * m, t_lt,
                lt_missing ? "*" : " ", t_k);
  }

  // 4. Prefill GEMMs (one layer's four matrices): ours (cuBLASLt by parts, f32 out, in the
  // batch-invariant order) vs cuBLASLt's own pick (bf16 out, split-K allowed).
  std::printf(
      "\nprefill GEMMs, one layer's qkv+o+gate_up+down; MFU against cuBLASLt's %.0f TFLOP/s\n",
      peak / 1e12);
  std::printf("%-6s %12s %8s %14s %8s %10s\n", "M", "ours TF/s", "MFU", "cuBLASLt TF/s", "MFU",
              "ours/Lt");
  for (int m : {128, 512, 4096}) {
    double flops = 0;
    for (const Mat& mat : kMats) flops += 2.0 * m * mat.n * double(mat.k);
    const float t_ours = time_ms(
        [&] {
          for (int mi = 0; mi < 4; ++mi)
            CHECK_CUDA(gemm.matmul(x.get<bf16>(), weights[mi].get<bf16>(), y.get<float>(), m,
                                   kMats[mi].n, kMats[mi].k, 0));
        },
        10);
    std::vector<std::function<void(cudaStream_t)>> plans;
    for (int mi = 0; mi < 4; ++mi)
      plans.push_back(lt.plan(x.get<bf16>(), weights[mi].get<bf16>(), y.get<bf16>(), m, kMats[mi].n,
                              kMats[mi].k));
    const float t_lt = time_ms(
        [&] {
          for (auto& p : plans) p(0);
        },
        10);
    const double ours = flops / (t_ours * 1e-3), lts = flops / (t_lt * 1e-3);
    std::printf("%-6d %12.0f %7.1f%% %14.0f %7.1f%% %9.2fx\n", m, ours / 1e12, 100 * ours / peak,
                lts / 1e12, 100 * lts / peak, ours / lts);
  }

  // 5. Bit-exactness: down_proj rows from M = 1, 8, 64 (small-M path) against M = 4096 (tiled).
  {
    const int n = kHidden, k = kFfn;
    std::vector<float> ref(size_t(64) * n), got(size_t(64) * n);
    CHECK_CUDA(cu::matmul(x.get<bf16>(), weights[3].get<bf16>(), logits.get<float>(), 64, n, k, 0,
                          cu::GemmPath::kTiled));
    cu::DeviceBuffer big(size_t(kMaxM) * n * 4);
    CHECK_CUDA(cu::matmul(x.get<bf16>(), weights[3].get<bf16>(), big.get<float>(), kMaxM, n, k, 0));
    CHECK_CUDA(cudaMemcpy(ref.data(), big.get(), ref.size() * 4, cudaMemcpyDeviceToHost));
    bool same = true;
    for (int m : {1, 8, 64}) {
      CHECK_CUDA(cudaMemset(logits.get(), 0xff, size_t(64) * n * 4));
      CHECK_CUDA(
          cu::matmul(x.get<bf16>(), weights[3].get<bf16>(), logits.get<float>(), m, n, k, 0));
      CHECK_CUDA(cudaMemcpy(got.data(), logits.get(), size_t(m) * n * 4, cudaMemcpyDeviceToHost));
      same &= std::memcmp(got.data(), ref.data(), size_t(m) * n * 4) == 0;
    }
    std::printf("\nbit-exact: down_proj rows at M=1/8/64 (small-M) vs M=4096 (tiled): %s\n",
                same ? "identical" : "DIFFER");
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  return 0;
}
