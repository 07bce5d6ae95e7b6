// H200 bench of long-prompt prefill with Llama-3.1-8B's shapes on random bf16 weights made at run
// time: the decoder's multi-row layer (norm, qkv, RoPE + KV write, paged attention, o, norm,
// gate_up, SwiGLU, down) over the backend's kernels, a prompt prefilled in chunks, timed to its
// last token's logits (TTFT, cold: no cached prefix). Each size runs with the wide prefill
// attention kernel and, up to --narrow-up-to, another one in the same run (--compare narrow: the
// 64-line kernel, the default; wgmma: the wide kernel's walk on wgmma); their logits must be
// bit-identical. MFU is against cuBLASLt's bf16 rate measured here. --save FILE keeps the times;
// --previous FILE prints each beside an earlier run's.
//   long_prefill [--chunk 8192] [--narrow-up-to 32768] [--sizes 4096,8192,...] [--attention-only 1]
//                [--compare narrow|wgmma] [--save FILE] [--previous FILE]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "../results.h"
#include "backend/cuda/device.h"
#include "backend/cuda/gemm_lt.h"
#include "backend/cuda/ops.h"
#include "gpu_check.h"  // tests/gpu: CHECK_CUDA, Lt, time_ms, cu, bf16

namespace {

using tf::gpu_check::Lt;
using tf::gpu_check::time_ms;

constexpr int kHidden = 4096, kFfn = 14336, kLayers = 32, kHeads = 32, kKvHeads = 8, kHd = 128,
              kVocab = 128256, kBs = 16;
constexpr int kQkv = (kHeads + 2 * kKvHeads) * kHd;
constexpr double kLayerParams = double(kQkv) * kHidden + double(kHidden) * kHidden +
                                2.0 * kFfn * kHidden + double(kHidden) * kFfn;

using tf::gpu_check::random_buffer;

// Prompt FLOPs: the four matmuls per token and layer, causal attention (QK and PV over every
// visible position) and the last token's lm_head.
double prompt_flops(int n) {
  const double attn = 4.0 * kHd * kHeads * kLayers * (double(n) * (n + 1) / 2);
  return 2.0 * kLayerParams * kLayers * n + attn + 2.0 * kVocab * kHidden;
}
double attention_flops(int n) { return 4.0 * kHd * kHeads * (double(n) * (n + 1) / 2); }

struct Layer {
  cu::DeviceBuffer qkv, o, gate_up, down, norm1, norm2;
};

struct Model {
  std::vector<Layer> layers;
  cu::DeviceBuffer embed, lm_head, out_norm, cos, sin;
  cu::DeviceBuffer k_cache, v_cache;  // [layer][slot][kv head][hd]
  size_t layer_kv_elems;
  int max_pos;

  explicit Model(int max_positions) : max_pos(max_positions) {
    const float ws = 0.03f;
    for (int l = 0; l < kLayers; ++l) {
      Layer L;
      L.qkv = random_buffer(size_t(kQkv) * kHidden, 100 + l, ws);
      L.o = random_buffer(size_t(kHidden) * kHidden, 200 + l, ws);
      L.gate_up = random_buffer(size_t(2) * kFfn * kHidden, 300 + l, ws);
      L.down = random_buffer(size_t(kHidden) * kFfn, 400 + l, ws / 2);
      L.norm1 = random_buffer(kHidden, 500 + l, 1.0f);
      L.norm2 = random_buffer(kHidden, 600 + l, 1.0f);
      layers.push_back(std::move(L));
    }
    embed = random_buffer(size_t(kVocab) * kHidden, 1, 1.0f);
    lm_head = random_buffer(size_t(kVocab) * kHidden, 2, ws);
    out_norm = random_buffer(kHidden, 3, 1.0f);
    // RoPE tables as Llama-3.1's (theta 500000, no scaling: speed does not depend on it).
    std::vector<float> c(size_t(max_pos) * kHd / 2), s(c.size());
    for (int p = 0; p < max_pos; ++p) {
      for (int i = 0; i < kHd / 2; ++i) {
        const double a = p * std::pow(500000.0, -2.0 * i / kHd);
        c[size_t(p) * kHd / 2 + i] = float(std::cos(a));
        s[size_t(p) * kHd / 2 + i] = float(std::sin(a));
      }
    }
    cos = tf::gpu_check::upload(c);
    sin = tf::gpu_check::upload(s);
    layer_kv_elems = size_t(max_pos) * kKvHeads * kHd;
    k_cache = cu::DeviceBuffer(layer_kv_elems * kLayers * sizeof(bf16));
    v_cache = cu::DeviceBuffer(layer_kv_elems * kLayers * sizeof(bf16));
    CHECK_CUDA(cudaDeviceSynchronize());
  }
};

// The activations of one chunk of at most `rows` rows.
struct Work {
  cu::DeviceBuffer x, h, qkv, q, att, o, gu, act, down, ids, pos, slots, seq, table, tiles, last,
      xg, hg, logits;
  explicit Work(int rows, int max_pos)
      : x(size_t(rows) * kHidden * 4),
        h(size_t(rows) * kHidden * 2),
        qkv(size_t(rows) * kQkv * 4),
        q(size_t(rows) * kHeads * kHd * 2),
        att(size_t(rows) * kHeads * kHd * 2),
        o(size_t(rows) * kHidden * 4),
        gu(size_t(rows) * 2 * kFfn * 4),
        act(size_t(rows) * kFfn * 2),
        down(size_t(rows) * kHidden * 4),
        ids(size_t(rows) * 4),
        pos(size_t(rows) * 4),
        slots(size_t(rows) * 8),
        seq(size_t(rows) * 4),
        table(size_t(max_pos / kBs + 1) * 4),
        tiles(size_t(rows) * sizeof(cu::AttentionTile)),
        last(4),
        xg(kHidden * 4),
        hg(kHidden * 2),
        logits(size_t(kVocab) * 4) {}
};

// One chunk [c0, c0 + n) of a prompt through every layer; the last chunk also makes the last
// token's logits.
void run_chunk(Model& m, Work& w, cu::LtGemm& gemm, int c0, int n, bool last_chunk,
               cu::TileKernel kernel, bool attention_only, cudaStream_t s) {
  std::vector<int32_t> ids(n), pos(n), seq(n, 0);
  std::vector<int64_t> slots(n);
  for (int i = 0; i < n; ++i) {
    pos[i] = c0 + i;
    slots[i] = c0 + i;  // the identity block table below
    ids[i] = int32_t((uint32_t(c0 + i) * 2654435761u) % kVocab);
  }
  const int tile_rows = cu::attention_tile_rows(kHeads / kKvHeads, kernel);
  std::vector<cu::AttentionTile> tiles;
  for (int end = n; end > 0; end -= tile_rows)
    tiles.push_back({std::max(0, end - tile_rows), end - std::max(0, end - tile_rows)});
  CHECK_CUDA(cudaMemcpyAsync(w.ids.get(), ids.data(), n * 4, cudaMemcpyHostToDevice, s));
  CHECK_CUDA(cudaMemcpyAsync(w.pos.get(), pos.data(), n * 4, cudaMemcpyHostToDevice, s));
  CHECK_CUDA(cudaMemcpyAsync(w.seq.get(), seq.data(), n * 4, cudaMemcpyHostToDevice, s));
  CHECK_CUDA(cudaMemcpyAsync(w.slots.get(), slots.data(), n * 8, cudaMemcpyHostToDevice, s));
  CHECK_CUDA(cudaMemcpyAsync(w.tiles.get(), tiles.data(), tiles.size() * sizeof(tiles[0]),
                             cudaMemcpyHostToDevice, s));
  CHECK_CUDA(cudaStreamSynchronize(s));  // the host vectors die with this call

  const float eps = 1e-5f;
  const cu::QkvParams qp{kHeads, kKvHeads, kHd, kHd, false, eps};
  cu::AttentionParams ap{
      kHeads, kKvHeads, kHd, kBs, m.max_pos / kBs + 1, 1.0f / std::sqrt(float(kHd))};
  cu::AttentionBatch ab;
  ab.tiles = w.tiles.get<cu::AttentionTile>();
  ab.n_tiles = static_cast<int>(tiles.size());
  ab.out = w.att.get<bf16>();
  ab.tile_kernel = kernel;
  if (attention_only) {  // one layer's attention over caches filled beforehand
    CHECK_CUDA(cu::paged_attention(w.q.get<bf16>(), m.k_cache.get<bf16>(), m.v_cache.get<bf16>(),
                                   w.table.get<int32_t>(), w.seq.get<int32_t>(),
                                   w.pos.get<int32_t>(), ap, ab, s));
    return;
  }
  CHECK_CUDA(
      cu::embedding(m.embed.get<bf16>(), w.ids.get<int32_t>(), w.x.get<float>(), n, kHidden, s));
  const float* mlp_out = nullptr;
  for (int l = 0; l < kLayers; ++l) {
    const Layer& L = m.layers[l];
    bf16* kc = m.k_cache.get<bf16>() + m.layer_kv_elems * l;
    bf16* vc = m.v_cache.get<bf16>() + m.layer_kv_elems * l;
    CHECK_CUDA(cu::add_rms_norm(w.x.get<float>(), mlp_out, L.norm1.get<bf16>(), w.h.get<bf16>(), n,
                                kHidden, eps, s));
    CHECK_CUDA(
        gemm.matmul(w.h.get<bf16>(), L.qkv.get<bf16>(), w.qkv.get<float>(), n, kQkv, kHidden, s));
    cu::QkvTensors qt;
    qt.cos = m.cos.get<float>();
    qt.sin = m.sin.get<float>();
    qt.pos = w.pos.get<int32_t>();
    qt.slots = w.slots.get<int64_t>();
    qt.q_out = w.q.get<bf16>();
    qt.k_cache = kc;
    qt.v_cache = vc;
    CHECK_CUDA(cu::qkv_rope_kv_write(w.qkv.get<float>(), qp, qt, n, s));
    CHECK_CUDA(cu::paged_attention(w.q.get<bf16>(), kc, vc, w.table.get<int32_t>(),
                                   w.seq.get<int32_t>(), w.pos.get<int32_t>(), ap, ab, s));
    CHECK_CUDA(gemm.matmul(w.att.get<bf16>(), L.o.get<bf16>(), w.o.get<float>(), n, kHidden,
                           kHeads * kHd, s));
    CHECK_CUDA(cu::add_rms_norm(w.x.get<float>(), w.o.get<float>(), L.norm2.get<bf16>(),
                                w.h.get<bf16>(), n, kHidden, eps, s));
    // gate_up is one part: stored as bf16, as the decoder does.
    CHECK_CUDA(gemm.matmul(w.h.get<bf16>(), L.gate_up.get<bf16>(), w.gu.get<bf16>(), n, 2 * kFfn,
                           kHidden, s));
    CHECK_CUDA(cu::glu_interleaved(w.gu.get<bf16>(), w.act.get<bf16>(), n, kFfn, s));
    CHECK_CUDA(gemm.matmul(w.act.get<bf16>(), L.down.get<bf16>(), w.down.get<float>(), n, kHidden,
                           kFfn, s));
    mlp_out = w.down.get<float>();
  }
  CHECK_CUDA(cu::add_rms_norm(w.x.get<float>(), mlp_out, m.out_norm.get<bf16>(), w.h.get<bf16>(), n,
                              kHidden, eps, s));
  if (!last_chunk) return;
  const int32_t last = n - 1;
  CHECK_CUDA(cudaMemcpyAsync(w.last.get(), &last, 4, cudaMemcpyHostToDevice, s));
  CHECK_CUDA(
      cu::gather_rows(w.x.get<float>(), w.last.get<int32_t>(), w.xg.get<float>(), 1, kHidden, s));
  CHECK_CUDA(cu::add_rms_norm(w.xg.get<float>(), nullptr, m.out_norm.get<bf16>(), w.hg.get<bf16>(),
                              1, kHidden, eps, s));
  CHECK_CUDA(gemm.matmul(w.hg.get<bf16>(), m.lm_head.get<bf16>(), w.logits.get<float>(), 1, kVocab,
                         kHidden, s));
  CHECK_CUDA(cudaStreamSynchronize(s));  // `last` lives on this frame
}

// A prompt of n tokens in chunks: seconds to its last token's logits (which land in logits).
double prefill(Model& m, Work& w, cu::LtGemm& gemm, int n, int chunk, cu::TileKernel kernel,
               std::vector<float>* logits, cudaStream_t s) {
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  for (int c0 = 0; c0 < n; c0 += chunk) {
    const int len = std::min(chunk, n - c0);
    run_chunk(m, w, gemm, c0, len, c0 + len == n, kernel, false, s);
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (logits) *logits = tf::gpu_check::download<float>(w.logits, kVocab);
  return sec;
}

std::string fnv1a(const std::vector<float>& v) {
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char c :
       std::span(reinterpret_cast<const unsigned char*>(v.data()), v.size() * sizeof(float))) {
    h = (h ^ c) * 1099511628211ull;
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  int chunk = 8192, narrow_up_to = 32768;
  bool attention_only = false;
  std::string save_path, previous_path;
  cu::TileKernel before = cu::TileKernel::kNarrow;
  const char* before_name = "narrow";
  std::vector<int> sizes{4096, 8192, 16384, 32768, 65536, 131072};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--chunk") chunk = std::atoi(argv[i + 1]);
    if (a == "--narrow-up-to") narrow_up_to = std::atoi(argv[i + 1]);
    if (a == "--sizes") sizes = tf::gpu_check::parse_list(argv[i + 1]);
    if (a == "--attention-only") attention_only = std::atoi(argv[i + 1]) != 0;
    if (a == "--compare" && std::string(argv[i + 1]) == "wgmma") {
      before = cu::TileKernel::kWgmma;
      before_name = "wgmma";
    }
    if (a == "--save") save_path = argv[i + 1];
    if (a == "--previous") previous_path = argv[i + 1];
  }
  const tf::bench::Results prev = tf::bench::read_results(previous_path);
  tf::bench::Results now;
  // Keeps a figure, and gives " previous value (change)" where an earlier run has it.
  auto keep = [&](const std::string& key, double value, int decimals) {
    now[key] = value;
    const std::string p = tf::bench::previous(prev, key, value, decimals);
    return p == "-" ? std::string() : "  previous " + p;
  };
  int max_n = 0;
  for (int n : sizes) max_n = std::max(max_n, n);
  CHECK_CUDA(cu::tune_device());
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs; chunks of %d tokens\n", prop.name, prop.multiProcessorCount,
              chunk);
  double peak;
  {
    Lt lt;
    const int s = 8192;
    cu::DeviceBuffer x = random_buffer(size_t(s) * s, 7, 1.0f),
                     wt = random_buffer(size_t(s) * s, 8, 1.0f), y(size_t(s) * s * 2);
    auto run = lt.plan(x.get<bf16>(), wt.get<bf16>(), y.get<bf16>(), s, s, s);
    const float ms = time_ms([&] { run(0); }, 20);
    peak = 2.0 * s * s * double(s) / (ms * 1e-3);
  }
  std::printf("cuBLASLt bf16 rate (8192^3): %.0f TFLOP/s\n", peak / 1e12);

  Model m(max_n);
  Work w(std::min(chunk, max_n), max_n);
  {
    std::vector<int32_t> table(max_n / kBs + 1);
    for (size_t b = 0; b < table.size(); ++b) table[b] = int32_t(b);
    CHECK_CUDA(cudaMemcpy(w.table.get(), table.data(), table.size() * 4, cudaMemcpyHostToDevice));
  }
  cu::LtGemm gemm;
  CHECK_CUDA(gemm.init());
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // 1. Attention alone: one layer's prefill attention for the whole prompt, chunk by chunk, over
  // random Q and caches (fill the caches with one prefill of the largest size first).
  {
    cu::DeviceBuffer qr = random_buffer(size_t(std::min(chunk, max_n)) * kHeads * kHd, 9, 1.0f);
    CHECK_CUDA(cudaMemcpy(w.q.get(), qr.get(), qr.bytes(), cudaMemcpyDeviceToDevice));
    cu::DeviceBuffer kr = random_buffer(m.layer_kv_elems, 10, 1.0f),
                     vr = random_buffer(m.layer_kv_elems, 11, 1.0f);
    CHECK_CUDA(cudaMemcpy(m.k_cache.get(), kr.get(), kr.bytes(), cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaMemcpy(m.v_cache.get(), vr.get(), vr.bytes(), cudaMemcpyDeviceToDevice));
    std::printf("\nprefill attention alone, one layer (32/8 heads of 128), chunks of %d\n", chunk);
    std::printf("%8s %12s %10s %8s %9s ms %10s %8s %8s\n", "tokens", "wide ms", "TFLOP/s", "MFU",
                before_name, "TFLOP/s", "MFU", "speedup");
    for (int n : sizes) {
      auto layer = [&](cu::TileKernel k) {
        for (int c0 = 0; c0 < n; c0 += chunk)
          run_chunk(m, w, gemm, c0, std::min(chunk, n - c0), false, k, true, s);
        CHECK_CUDA(cudaStreamSynchronize(s));
      };
      const int reps = n <= 32768 ? 3 : 1;
      const float wide = time_ms([&] { layer(cu::TileKernel::kWide); }, reps);
      const double f = attention_flops(n);
      std::printf("%8d %12.2f %10.0f %7.1f%%", n, wide, f / (wide * 1e-3) / 1e12,
                  100 * f / (wide * 1e-3) / peak);
      std::string notes = keep("attention_ms/wide/" + std::to_string(n), wide, 2);
      if (n <= narrow_up_to) {
        const float narrow = time_ms([&] { layer(before); }, reps);
        std::printf(" %12.2f %10.0f %7.1f%% %7.2fx", narrow, f / (narrow * 1e-3) / 1e12,
                    100 * f / (narrow * 1e-3) / peak, narrow / wide);
        notes +=
            keep(std::string("attention_ms/") + before_name + "/" + std::to_string(n), narrow, 2);
      }
      std::printf("%s\n", notes.c_str());
    }
  }

  if (attention_only) {
    if (tf::bench::save_results(save_path, now)) return 0;
    std::printf("error: could not write %s\n", save_path.c_str());
    return 1;
  }

  // 2. The whole prefill, cold (no cached prefix), to the last token's logits.
  prefill(m, w, gemm, std::min(chunk, max_n), chunk, cu::TileKernel::kWide, nullptr, s);  // warm-up
  std::printf("\nprefill to the first token (TTFT), Llama-3.1-8B shapes, bf16, random weights\n");
  std::printf("%8s %10s %10s %8s %7s TTFT %10s %8s %9s %8s %17s\n", "tokens", "TTFT s", "tok/s",
              "MFU", before_name, "tok/s", "MFU", "speedup", "logits", "logits' FNV-1a");
  bool all_same = true;
  for (int n : sizes) {
    std::vector<float> wide_logits, narrow_logits;
    double wide = prefill(m, w, gemm, n, chunk, cu::TileKernel::kWide, &wide_logits, s);
    if (n <= 32768)
      wide = std::min(wide, prefill(m, w, gemm, n, chunk, cu::TileKernel::kWide, nullptr, s));
    const double f = prompt_flops(n);
    std::printf("%8d %10.3f %10.0f %7.1f%%", n, wide, n / wide, 100 * f / wide / peak);
    std::string notes = keep("ttft_s/wide/" + std::to_string(n), wide, 3);
    if (n <= narrow_up_to) {
      const double narrow = prefill(m, w, gemm, n, chunk, before, &narrow_logits, s);
      const bool same =
          std::memcmp(wide_logits.data(), narrow_logits.data(), kVocab * sizeof(float)) == 0;
      all_same &= same;
      std::printf(" %12.3f %10.0f %7.1f%% %8.2fx %8s", narrow, n / narrow, 100 * f / narrow / peak,
                  narrow / wide, same ? "same" : "DIFFER");
      notes += keep(std::string("ttft_s/") + before_name + "/" + std::to_string(n), narrow, 3);
    }
    // For comparing builds: two binaries' kernels agree where their hashes do.
    std::printf(" %17s%s\n", fnv1a(wide_logits).c_str(), notes.c_str());
  }
  std::printf(
      "\nMFU: prompt FLOPs (2 x %.2fG matmul weights x tokens + causal attention + "
      "lm_head) / TTFT / %.0f TFLOP/s\n",
      kLayerParams * kLayers / 1e9, peak / 1e12);
  std::printf("wide and %s kernels' logits: %s\n", before_name, all_same ? "identical" : "DIFFER");
  CHECK_CUDA(cudaStreamDestroy(s));
  const bool saved = tf::bench::save_results(save_path, now);
  if (!saved) std::printf("error: could not write %s\n", save_path.c_str());
  return all_same && saved ? 0 : 1;
}
