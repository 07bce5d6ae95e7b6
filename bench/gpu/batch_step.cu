// H200 bench of a decode step of M rows (M sequences, one token each, P to P + 127 positions of
// context, P = 512 unless --context says) with Llama-3.1-8B's shapes on random bf16 weights: the decoder's many-row path (norm,
// qkv, RoPE + KV write, paged attention by splits, o, norm, gate_up, SwiGLU, down; lm_head, argmax)
// as one graph, beside its floor (every weight and every K/V row read once at the copy rate) and
// the same graph without each part, so each part's share of the step shows.
//   batch_step [--rows 1,8,32,64,128] [--context P]
// ("cuBLASLt" and "kernels": every row count on that path, for where LtGemm::kMinRows sits.)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/gemm_lt.h"
#include "backend/cuda/ops.h"
#include "gpu_check.h"  // tests/gpu: CHECK_CUDA, time_ms, cu, bf16

namespace {

using tf::gpu_check::time_ms;

constexpr int kHidden = 4096, kFfn = 14336, kLayers = 32, kHeads = 32, kKvHeads = 8, kHd = 128,
              kVocab = 128256, kBs = 16, kMaxRows = 128;
constexpr int kQkv = (kHeads + 2 * kKvHeads) * kHd, kQDim = kHeads * kHd;

using tf::gpu_check::random_buffer;

struct Graph {
  cudaGraphExec_t exec = nullptr;
  explicit Graph(const std::function<void(cudaStream_t)>& fn) {
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t g;
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    fn(s);
    CHECK_CUDA(cudaStreamEndCapture(s, &g));
    CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
    CHECK_CUDA(cudaGraphDestroy(g));
    CHECK_CUDA(cudaStreamDestroy(s));
  }
  ~Graph() { cudaGraphExecDestroy(exec); }
  void launch() const { CHECK_CUDA(cudaGraphLaunch(exec, 0)); }
};

struct Layer {
  cu::DeviceBuffer qkv, o, gate_up, down, norm1, norm2;
};

// Weights, caches and the activations of up to kMaxRows rows.
struct Model {
  std::vector<Layer> layers;
  cu::DeviceBuffer embed, lm_head, out_norm, cos, sin, k_cache, v_cache;
  int base, seq_blocks, width;  // rows' first position, blocks a row, the table's width
  size_t layer_kv_elems;
  cu::DeviceBuffer x, h, qkv, q, att, o, gu, act, down, logits, parts, ids, pos, slots, seq, tables,
      scratch, counters, argmax, argmax_scratch;
  double weight_bytes = 0;

  explicit Model(int base_pos)
      : base(base_pos),
        seq_blocks((base_pos + 128) / kBs),
        width(int(std::bit_ceil(unsigned(seq_blocks)))),
        layer_kv_elems(size_t(kMaxRows * seq_blocks + 1) * kBs * kKvHeads * kHd) {
    const float ws = 0.03f;
    for (int l = 0; l < kLayers; ++l) {
      Layer L;
      L.qkv = random_buffer(size_t(kQkv) * kHidden, 100 + l, ws);
      L.o = random_buffer(size_t(kHidden) * kQDim, 200 + l, ws);
      L.gate_up = random_buffer(size_t(2) * kFfn * kHidden, 300 + l, ws);
      L.down = random_buffer(size_t(kHidden) * kFfn, 400 + l, ws / 2);
      L.norm1 = random_buffer(kHidden, 500 + l, 1.0f);
      L.norm2 = random_buffer(kHidden, 600 + l, 1.0f);
      layers.push_back(std::move(L));
    }
    weight_bytes =
        2.0 * kLayers * (double(kQkv) * kHidden + double(kHidden) * kQDim + 3.0 * kFfn * kHidden) +
        2.0 * kVocab * kHidden;
    embed = random_buffer(size_t(kVocab) * kHidden, 1, 1.0f);
    lm_head = random_buffer(size_t(kVocab) * kHidden, 2, ws);
    out_norm = random_buffer(kHidden, 3, 1.0f);
    std::vector<float> c(size_t(base + 128) * kHd / 2), s(c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      c[i] = float(std::cos(0.001 * double(i)));
      s[i] = float(std::sin(0.001 * double(i)));
    }
    cos = tf::gpu_check::upload(c);
    sin = tf::gpu_check::upload(s);
    k_cache = random_buffer(layer_kv_elems * kLayers, 20, 1.0f);
    v_cache = random_buffer(layer_kv_elems * kLayers, 21, 1.0f);
    const size_t r = kMaxRows;
    x = cu::DeviceBuffer(r * kHidden * 4);
    h = cu::DeviceBuffer(r * kHidden * 2);
    qkv = cu::DeviceBuffer(r * kQkv * 4);
    q = cu::DeviceBuffer(r * kQDim * 2);
    att = cu::DeviceBuffer(r * kQDim * 2);
    o = cu::DeviceBuffer(r * kHidden * 4);
    gu = cu::DeviceBuffer(r * 2 * kFfn * 4);
    act = cu::DeviceBuffer(r * kFfn * 2);
    down = cu::DeviceBuffer(r * kHidden * 4);
    logits = cu::DeviceBuffer(r * kVocab * 4);
    parts = cu::DeviceBuffer(std::max({cu::LtGemm::part_scratch_bytes(kMaxRows, kQkv, kHidden),
                                       cu::LtGemm::part_scratch_bytes(kMaxRows, kHidden, kQDim),
                                       cu::LtGemm::part_scratch_bytes(kMaxRows, kHidden, kFfn)}));
    const int splits = cu::attention_max_splits(width * kBs);
    scratch = cu::DeviceBuffer(cu::attention_scratch_bytes(kMaxRows, kHeads, kHd, splits));
    counters = cu::DeviceBuffer(cu::attention_counter_bytes(kMaxRows, kKvHeads));
    CHECK_CUDA(cudaMemset(counters.get(), 0, counters.bytes()));
    argmax = cu::DeviceBuffer(r * 4);
    argmax_scratch = cu::DeviceBuffer(cu::argmax_scratch_bytes());
    CHECK_CUDA(cudaMemset(argmax_scratch.get(), 0, argmax_scratch.bytes()));
    CHECK_CUDA(cudaMemset(x.get(), 0, x.bytes()));
    // Row r: sequence r at position base + (37 r) % 128, its blocks scattered over the pool.
    std::vector<int32_t> ids_h(r), pos_h(r), seq_h(r), tab(r * width);
    std::vector<int64_t> slots_h(r);
    for (int i = 0; i < kMaxRows; ++i) {
      ids_h[i] = int32_t((uint32_t(i) * 2654435761u) % kVocab);
      pos_h[i] = base + (37 * i) % 128;
      seq_h[i] = i;
      for (int b = 0; b < width; ++b) {
        tab[size_t(i) * width + b] =
            b < seq_blocks
                ? int32_t((uint32_t(i * seq_blocks + b) * 7919u) % (kMaxRows * seq_blocks))
                : 0;
      }
      slots_h[i] = int64_t(tab[size_t(i) * width + pos_h[i] / kBs]) * kBs + pos_h[i] % kBs;
    }
    ids = tf::gpu_check::upload(ids_h);
    pos = tf::gpu_check::upload(pos_h);
    seq = tf::gpu_check::upload(seq_h);
    tables = tf::gpu_check::upload(tab);
    slots = tf::gpu_check::upload(slots_h);
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  // K/V bytes the first n rows read at every layer (their positions, K and V).
  double kv_bytes(int n) const {
    double b = 0;
    for (int i = 0; i < n; ++i) b += (base + (37 * i) % 128 + 1) * 2.0 * kKvHeads * kHd * 2;
    return b * kLayers;
  }
};

// Which kernels run the matmuls: LtGemm's pick by rows (the decoder's), cuBLASLt at every row
// count, or the decode kernels at every row count.
enum class Path { kDecoder, kLt, kKernels };

// What a step graph leaves out or how it runs a part.
struct Variant {
  const char* name;
  bool attention = true, matmuls = true, others = true, batched = true;
  Path path = Path::kDecoder;
  cu::SplitKernel split = cu::SplitKernel::kAuto;  // which kernel runs attention's split rows
};

void enqueue_step(Model& m, cu::LtGemm& gemm, int n, const Variant& v, cudaStream_t s) {
  const float eps = 1e-5f;
  float* parts = v.batched ? m.parts.get<float>() : nullptr;
  // The o and down projections leave their parts for the norm after them to add (the decoder's
  // unsummed parts); `left` gets their count.
  auto mm = [&](const bf16* x, const cu::DeviceBuffer& w, float* y, int cols, int k,
                int* left = nullptr) {
    if (left) *left = 1;
    if (!v.matmuls) return;
    if (v.path == Path::kKernels) {
      CHECK_CUDA(cu::matmul(x, w.get<bf16>(), y, n, cols, k, s));
    } else if (v.path == Path::kLt) {
      // A shape cuBLASLt has no split-free algorithm for runs on the kernels, as in the decoder.
      const cudaError_t e = gemm.matmul_lt(x, w.get<bf16>(), y, n, cols, k, s, parts, left);
      CHECK_CUDA(e == cudaErrorNotSupported ? cu::matmul(x, w.get<bf16>(), y, n, cols, k, s) : e);
    } else {
      CHECK_CUDA(gemm.matmul(x, w.get<bf16>(), y, n, cols, k, s, parts, left));
    }
  };
  auto delta = [&](float* y, int count) { return count > 1 ? m.parts.get<float>() : y; };
  const cu::QkvParams qp{kHeads, kKvHeads, kHd, kHd, false, eps};
  cu::AttentionParams ap{kHeads, kKvHeads, kHd, kBs, m.width, 1.0f / std::sqrt(float(kHd))};
  cu::AttentionBatch ab;
  ab.n_split_rows = n;
  ab.max_splits = cu::attention_max_splits(m.width * kBs);
  ab.split_kernel = v.split;
  ab.scratch = m.scratch.get<float>();
  ab.counters = m.counters.get<int32_t>();
  ab.out = m.att.get<bf16>();
  float* x = m.x.get<float>();
  if (v.others)
    CHECK_CUDA(cu::embedding(m.embed.get<bf16>(), m.ids.get<int32_t>(), x, n, kHidden, s));
  const float* mlp_out = nullptr;
  int mlp_parts = 1, o_parts = 1;
  for (int l = 0; l < kLayers; ++l) {
    const Layer& L = m.layers[l];
    bf16* kc = m.k_cache.get<bf16>() + m.layer_kv_elems * l;
    bf16* vc = m.v_cache.get<bf16>() + m.layer_kv_elems * l;
    if (v.others)
      CHECK_CUDA(cu::add_rms_norm(x, mlp_out, L.norm1.get<bf16>(), m.h.get<bf16>(), n, kHidden, eps,
                                  s, mlp_parts));
    int qkv_parts = 1;  // left unsummed for qkv_rope_kv_write, as the decoder does
    mm(m.h.get<bf16>(), L.qkv, m.qkv.get<float>(), kQkv, kHidden, &qkv_parts);
    cu::QkvTensors qt;
    qt.cos = m.cos.get<float>();
    qt.sin = m.sin.get<float>();
    qt.pos = m.pos.get<int32_t>();
    qt.slots = m.slots.get<int64_t>();
    qt.q_out = m.q.get<bf16>();
    qt.k_cache = kc;
    qt.v_cache = vc;
    qt.qkv_parts = qkv_parts;
    if (v.others)
      CHECK_CUDA(cu::qkv_rope_kv_write(delta(m.qkv.get<float>(), qkv_parts), qp, qt, n, s));
    if (v.attention)
      CHECK_CUDA(cu::paged_attention(m.q.get<bf16>(), kc, vc, m.tables.get<int32_t>(),
                                     m.seq.get<int32_t>(), m.pos.get<int32_t>(), ap, ab, s));
    mm(m.att.get<bf16>(), L.o, m.o.get<float>(), kHidden, kQDim, &o_parts);
    if (v.others)
      CHECK_CUDA(cu::add_rms_norm(x, delta(m.o.get<float>(), o_parts), L.norm2.get<bf16>(),
                                  m.h.get<bf16>(), n, kHidden, eps, s, o_parts));
    // The decoder's pick stores gate_up (one part) as bf16 from kMinRows rows.
    if (v.path == Path::kDecoder && n >= cu::LtGemm::kMinRows) {
      if (v.matmuls)
        CHECK_CUDA(gemm.matmul(m.h.get<bf16>(), L.gate_up.get<bf16>(), m.gu.get<bf16>(), n,
                               2 * kFfn, kHidden, s));
      if (v.others)
        CHECK_CUDA(cu::glu_interleaved(m.gu.get<bf16>(), m.act.get<bf16>(), n, kFfn, s));
    } else {
      mm(m.h.get<bf16>(), L.gate_up, m.gu.get<float>(), 2 * kFfn, kHidden);
      if (v.others)
        CHECK_CUDA(cu::glu_interleaved(m.gu.get<float>(), m.act.get<bf16>(), n, kFfn, s));
    }
    mm(m.act.get<bf16>(), L.down, m.down.get<float>(), kHidden, kFfn, &mlp_parts);
    mlp_out = delta(m.down.get<float>(), mlp_parts);
  }
  if (v.others) {
    // Every row wants its logits: the final norm's output is projected as it is.
    CHECK_CUDA(cu::add_rms_norm(x, mlp_out, m.out_norm.get<bf16>(), m.h.get<bf16>(), n, kHidden,
                                eps, s, mlp_parts));
  }
  mm(m.h.get<bf16>(), m.lm_head, m.logits.get<float>(), kVocab, kHidden);
  if (v.others)
    CHECK_CUDA(cu::argmax_rows(m.logits.get<float>(), n, kVocab, m.argmax.get<int32_t>(), s,
                               nullptr, m.argmax_scratch.get()));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> rows{1, 8, 32, 64, 128};
  int base = 512;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--rows") rows = tf::gpu_check::parse_list(argv[i + 1]);
    if (std::string(argv[i]) == "--context") base = std::atoi(argv[i + 1]);
  }
  for (int n : rows) {
    if (n < 1 || n > kMaxRows) {
      std::fprintf(stderr, "--rows: %d is outside 1..%d (the buffers' rows)\n", n, kMaxRows);
      return 2;
    }
  }
  CHECK_CUDA(cu::tune_device());
  double copy_bw;
  {
    const size_t bytes = size_t(4) << 30;
    cu::DeviceBuffer a = random_buffer(bytes / 2, 1, 1.0f), b(bytes);
    const float ms = time_ms(
        [&] { CHECK_CUDA(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice)); },
        20);
    copy_bw = 2.0 * bytes / (ms * 1e-3);
  }
  Model m(base);
  cu::LtGemm gemm;
  CHECK_CUDA(gemm.init());
  std::printf("copy bandwidth %.0f GB/s; weights read a step %.2f GB\n", copy_bw / 1e9,
              m.weight_bytes / 1e9);
  const Variant variants[] = {
      {"step, parts chained", true, true, true, false},
      {"step", true, true, true, true},
      {"without attention", false, true, true, true},
      {"without the small ops", true, true, false, true},
      {"matmuls only, parts chained", false, true, false, false},
      {"matmuls only", false, true, false, true},
      {"matmuls only, cuBLASLt", false, true, false, true, Path::kLt},
      {"matmuls only, kernels", false, true, false, true, Path::kKernels},
      {"step, cuBLASLt", true, true, true, true, Path::kLt},
      {"step, kernels", true, true, true, true, Path::kKernels},
      {"attention only", true, false, false, true},
      {"attention only, walk", true, false, false, true, Path::kDecoder, cu::SplitKernel::kWalk},
      {"attention only, tiles", true, false, false, true, Path::kDecoder,
       cu::SplitKernel::kTiles},
      {"step, attention walk", true, true, true, true, Path::kDecoder, cu::SplitKernel::kWalk},
      {"small ops only", false, false, true, true},
  };

  std::printf("\ndecode step of M rows (%d-%d positions each), ms per step, one graph\n", base,
              base + 127);
  std::printf("%-30s", "M");
  for (int n : rows) std::printf(" %9d", n);
  std::printf("\n%-30s", "floor: weights + K/V at copy bw");
  for (int n : rows) std::printf(" %9.3f", (m.weight_bytes + m.kv_bytes(n)) / copy_bw * 1e3);
  std::printf("\n%-30s", "  of which K/V");
  for (int n : rows) std::printf(" %9.3f", m.kv_bytes(n) / copy_bw * 1e3);
  std::printf("\n");
  for (const Variant& v : variants) {
    std::printf("%-30s", v.name);
    for (int n : rows) {
      Graph g([&](cudaStream_t s) { enqueue_step(m, gemm, n, v, s); });
      std::printf(" %9.3f", time_ms([&] { g.launch(); }, 20));
      std::fflush(stdout);
    }
    std::printf("\n");
  }
  // Each matrix alone at M rows, 32 layers in one graph: GB/s of weights, chained and batched
  // (the batched parts left unsummed, as the step leaves them for their reader).
  std::printf("\nmatmuls alone, GB/s of weights (32 layers a graph): chained / batched parts\n");
  struct Mat {
    const char* name;
    int n, k, which;
  };
  const Mat mats[] = {{"qkv", kQkv, kHidden, 0},
                      {"o", kHidden, kQDim, 1},
                      {"gate_up", 2 * kFfn, kHidden, 2},
                      {"down", kHidden, kFfn, 3}};
  std::printf("%-8s", "matrix");
  for (int n : rows) std::printf(" %15d", n);
  std::printf("\n");
  for (const Mat& mat : mats) {
    std::printf("%-8s", mat.name);
    for (int n : rows) {
      float t[2];
      for (int b = 0; b < 2; ++b) {
        Graph g([&](cudaStream_t s) {
          for (int l = 0; l < kLayers; ++l) {
            const Layer& L = m.layers[l];
            const cu::DeviceBuffer* w[] = {&L.qkv, &L.o, &L.gate_up, &L.down};
            int left = 1;
            CHECK_CUDA(gemm.matmul(m.act.get<bf16>(), w[mat.which]->get<bf16>(), m.gu.get<float>(),
                                   n, mat.n, mat.k, s, b ? m.parts.get<float>() : nullptr,
                                   b ? &left : nullptr));
          }
        });
        t[b] = time_ms([&] { g.launch(); }, 20);
      }
      const double bytes = 2.0 * kLayers * mat.n * double(mat.k);
      std::printf("    %5.0f / %5.0f", bytes / (t[0] * 1e-3) / 1e9, bytes / (t[1] * 1e-3) / 1e9);
    }
    std::printf("\n");
  }
  return 0;
}
