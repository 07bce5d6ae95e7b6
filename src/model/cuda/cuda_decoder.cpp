// The shared decoder's forward step on the GPU. Same DecoderSpec, same weights (uploaded once as
// bf16 with q/k/v and gate/up concatenated), an f32 residual stream, bf16 activations and a bf16
// paged KV cache that mirrors the engine's block numbering. Every op is batch-invariant, so a
// row's logits do not depend on the other rows of a step nor on how its prompt was chunked.
#include "model/cuda/cuda_decoder.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cuda/device.h"
#include "backend/cuda/gemm_lt.h"
#include "backend/cuda/gemm_wgmma.h"
#include "backend/cuda/numerics.h"
#include "backend/cuda/ops.h"
#include "backend/cuda/token_mask.h"
#include "base/half.h"
#include "model/cuda/cuda_kv_transfer.h"
#include "model/cuda/cuda_moe.h"
#include "model/cuda/cuda_status.h"
#include "model/cuda/rank_exchange.h"
#include "model/cuda/uploader.h"
#include "model/rank_weights.h"
#include "model/rope.h"

namespace tf::model {
namespace {

namespace cuda = backend::cuda;
using cuda::bf16;
using cuda::DeviceBuffer;

// TF_CUDA_PROFILE=1: GPU time per op kind over the model's life, printed at exit (cudaEvents
// between ops; the extra sync per step makes it a diagnosis tool, not a default).
class PhaseTimer {
 public:
  PhaseTimer() : on_(std::getenv("TF_CUDA_PROFILE") != nullptr) {}
  ~PhaseTimer() {
    if (!on_ || totals_.empty()) return;
    double all = 0;
    for (const auto& [name, ms] : totals_) all += ms;
    std::fprintf(stderr, "CUDA time by op over %d steps (%.1f ms; decode %d):\n", steps_, all,
                 decode_steps_);
    for (const auto& [name, ms] : totals_) {
      std::fprintf(stderr, "  %-12s %9.2f ms  %5.1f%%\n", name.c_str(), ms, 100.0 * ms / all);
    }
  }
  void mark(const char* name, cudaStream_t s) {
    if (!on_) return;
    cudaEvent_t e;
    cudaEventCreate(&e);
    cudaEventRecord(e, s);
    marks_.push_back({name, e});
  }
  // kind: "decode" or "prefill" (steps whose chunks are all one token, or not), kept apart.
  void finish(const char* kind) {
    if (!on_ || marks_.empty()) return;
    cudaEventSynchronize(marks_.back().second);
    for (size_t i = 1; i < marks_.size(); ++i) {
      float ms = 0;
      cudaEventElapsedTime(&ms, marks_[i - 1].second, marks_[i].second);
      totals_[std::string(kind) + "/" + marks_[i].first] += ms;
    }
    for (auto& m : marks_) cudaEventDestroy(m.second);
    marks_.clear();
    ++steps_;
    if (std::string_view(kind) == "decode") ++decode_steps_;
  }

 private:
  bool on_;
  int steps_ = 0, decode_steps_ = 0;
  std::vector<std::pair<std::string, cudaEvent_t>> marks_;
  std::map<std::string, double> totals_;
};

// TF_CUDA_STEP_TIMES=1: where a graph-run step's wall time goes on the host side: the gap
// since the previous step (the engine's own time), the batch layout and uploads, then the launch
// and the run until the results are back (the argmax copy into pageable memory waits for the GPU,
// so the two are one span); and on the GPU, between events: the inputs' copy up, and the step's
// kernels from the copy's end to the selection's. Printed as means at exit.
class StepTimer {
 public:
  using Clock = std::chrono::steady_clock;
  StepTimer() : on_(std::getenv("TF_CUDA_STEP_TIMES") != nullptr) {}
  ~StepTimer() {
    if (on_ && steps_ > 0) {
      std::fprintf(stderr,
                   "decode steps %d, mean us: gap %.1f, prepare %.1f, launch and run %.1f "
                   "(GPU: copy up %.1f, kernels %.1f)\n",
                   steps_, us_[0] / steps_, us_[1] / steps_, us_[2] / steps_, us_[3] / steps_,
                   us_[4] / steps_);
    }
    for (cudaEvent_t e : events_) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    if (on_ && overlapped_ > 0) {
      std::fprintf(stderr,
                   "overlapped decode steps %d, mean us: per step %.1f, host waiting %.1f\n",
                   overlapped_, ov_us_[0] / overlapped_, ov_us_[1] / overlapped_);
    }
  }
  // Overlapped steps (launch_decode, collect): the time between two collects' returns, and the
  // part of it the host spent waiting for the GPU in collect.
  void collected(Clock::time_point wait_start) {
    if (!on_) return;
    const auto now = Clock::now();
    if (last_collect_ != Clock::time_point{}) {
      ov_us_[0] += std::chrono::duration<double, std::micro>(now - last_collect_).count();
      ov_us_[1] += std::chrono::duration<double, std::micro>(now - wait_start).count();
      ++overlapped_;
    }
    last_collect_ = now;
  }
  void mark(int i) {  // 0: step entry, 1: uploads queued, 2: results back
    if (on_) t_[i] = Clock::now();
  }
  // 0: before the inputs' copy (on its stream), 1: the kernels' start, 2: their end.
  void event(int i, cudaStream_t s) {
    if (!on_) return;
    if ((events_[i] == nullptr && cudaEventCreate(&events_[i]) != cudaSuccess) ||
        cudaEventRecord(events_[i], s) != cudaSuccess) {
      (void)cudaGetLastError();  // a diagnosis must not leave an error for the next launch
    }
  }
  void finish(bool decode) {  // after the stream's results are back
    if (!on_) return;
    if (decode && last_end_ != Clock::time_point{}) {
      us_[0] += std::chrono::duration<double, std::micro>(t_[0] - last_end_).count();
      for (int i = 1; i < 3; ++i)
        us_[i] += std::chrono::duration<double, std::micro>(t_[i] - t_[i - 1]).count();
      for (int i = 0; i < 2; ++i) {
        float ms = 0;
        if (events_[i] == nullptr || events_[i + 1] == nullptr ||
            cudaEventElapsedTime(&ms, events_[i], events_[i + 1]) != cudaSuccess) {
          (void)cudaGetLastError();
          continue;
        }
        us_[3 + i] += ms * 1e3;
      }
      ++steps_;
    }
    last_end_ = t_[2];
  }

 private:
  bool on_;
  int steps_ = 0, overlapped_ = 0;
  Clock::time_point t_[3], last_end_, last_collect_;
  double us_[5] = {}, ov_us_[2] = {};
  cudaEvent_t events_[3] = {};
};

struct DeviceLayer {
  DeviceBuffer attn_norm, ffn_norm;          // bf16 [d] (f32 with Gemma's 1 + w: norms_f32_)
  DeviceBuffer attn_out_norm, ffn_out_norm;  // f32 [d], or empty (Gemma's sandwich norms)
  DeviceBuffer q_norm, k_norm;               // f32 [head_dim], or empty
  DeviceBuffer qkv_bias;                     // f32 [q_dim + 2 kv_dim], or empty
  DeviceBuffer wqkv, wo, w_gate_up, w_down;  // w_gate_up and w_down empty on MoE layers
};

// With a rank part (rank_weights.h) the decoder is one tensor-parallel rank: its config has the
// rank's heads, KV heads and ffn columns (the whole vocabulary), its weights are the rank's, and
// `exchange` sums the ranks' embeddings, o and down projections and gathers their logits. Such a
// rank steps eagerly: its exchanges wait on the other ranks' streams, which a graph of its own
// stream cannot capture.
class CudaDecoder final : public Model {
 public:
  CudaDecoder(std::shared_ptr<DecoderModel> cpu, std::shared_ptr<const RankWeights> part,
              RankExchange* exchange)
      : cpu_(std::move(cpu)),
        part_(std::move(part)),
        exchange_(exchange),
        cfg_(part_ ? part_->config : cpu_->config()),
        spec_(cpu_->spec()),
        moe_(cfg_, spec_.act, part_ ? part_->expert_begin : 0, part_ ? part_->expert_count : 0),
        has_moe_(std::find(spec_.moe.begin(), spec_.moe.end(), true) != spec_.moe.end()),
        has_dense_(std::find(spec_.moe.begin(), spec_.moe.end(), false) != spec_.moe.end()),
        has_sandwich_(std::any_of(weights().layers.begin(), weights().layers.end(),
                                  [](const LayerWeights& L) {
                                    return !L.attn_out_norm.empty() || !L.ffn_out_norm.empty();
                                  })),
        norms_f32_(spec_.norm_offset),
        windowless_(
            std::all_of(spec_.window.begin(), spec_.window.end(), [](int w) { return w == 0; })),
        vocab_begin_(part_ ? static_cast<int>(part_->vocab_begin) : 0),
        vocab_rows_(part_ ? static_cast<int>(part_->vocab_count) : cfg_.vocab_size),
        rank_(part_ ? part_->rank : 0) {
    if (exchange_ != nullptr) graphs_enabled_ = false;
  }

  // The weights to upload (a rank's part, until drop_host_part()).
  const DecoderWeights& weights() const { return part_ ? part_->weights : cpu_->weights(); }
  // A rank's weights are on the device: its host copies of column parts (o and down, a few GB
  // for an 8B model) go.
  void drop_host_part() { part_.reset(); }

  Status check() const {
    auto unsupported = [&](const char* what) {
      return make_error(ErrorCode::kUnsupported, "the CUDA backend does not support {} yet ({})",
                        what, cfg_.family);
    };
    if (has_moe_) TF_RETURN_IF_ERROR(moe_.check());
    const int64_t hd = cfg_.head_dim, q_dim = cfg_.num_heads * hd;
    if (hd > 128 || hd % 8 != 0) return unsupported("head_dim above 128 or not a multiple of 8");
    if (cfg_.num_heads / cfg_.num_kv_heads > 64) {
      return unsupported("more than 64 query heads per KV head");
    }
    // matmul needs K % 32 and N % 8: K is hidden, q_dim or ffn; N is every output width, all
    // multiples of 8 once these hold (head_dim % 8 above).
    if (cfg_.hidden_size % 32 != 0 || q_dim % 32 != 0 ||
        (has_dense_ && cfg_.intermediate_size % 32 != 0) || vocab_rows_ % 8 != 0) {
      return unsupported("dimensions that are not multiples of 32 (K) and 8 (N)");
    }
    return {};
  }

  Status upload_all() {
    if (!cuda_device_present()) return make_error(ErrorCode::kUnsupported, "no CUDA device");
    TF_CUDA_TRY(cuda::tune_device());
    const DecoderWeights& w = weights();
    tied_ = w.output.data == w.embed.data;
    size_t total = Uploader::bytes({&w.embed}) + (tied_ ? 0 : Uploader::bytes({&w.output}));
    for (size_t i = 0; i < w.layers.size(); ++i) {
      const LayerWeights& L = w.layers[i];
      total += Uploader::bytes({&L.wq, &L.wk, &L.wv, &L.wo});
      total +=
          spec_.moe[i] ? CudaMoe::bytes(L.moe) : Uploader::bytes({&L.w_gate, &L.w_up, &L.w_down});
    }
    Uploader up(total);
    TF_RETURN_IF_ERROR(up.matrix({&w.embed}, embed_));
    if (!tied_) TF_RETURN_IF_ERROR(up.matrix({&w.output}, output_));
    // Norm weights as bf16 (what the fused one-row kernels read), or f32 where they hold
    // Gemma's 1 + w, which bf16 would round.
    auto upload_norm = [&](DeviceBuffer& dst, const std::vector<float>& v) {
      return norms_f32_ ? upload(dst, v) : upload(dst, to_bf16(v));
    };
    TF_RETURN_IF_ERROR(upload_norm(out_norm_, w.out_norm));
    layers_.resize(w.layers.size());
    for (size_t i = 0; i < w.layers.size(); ++i) {
      const LayerWeights& L = w.layers[i];
      DeviceLayer& D = layers_[i];
      TF_RETURN_IF_ERROR(upload_norm(D.attn_norm, L.attn_norm));
      TF_RETURN_IF_ERROR(upload_norm(D.ffn_norm, L.ffn_norm));
      if (!L.attn_out_norm.empty()) TF_RETURN_IF_ERROR(upload(D.attn_out_norm, L.attn_out_norm));
      if (!L.ffn_out_norm.empty()) TF_RETURN_IF_ERROR(upload(D.ffn_out_norm, L.ffn_out_norm));
      if (!L.q_norm.empty()) {
        TF_RETURN_IF_ERROR(upload(D.q_norm, L.q_norm));
        TF_RETURN_IF_ERROR(upload(D.k_norm, L.k_norm));
      }
      if (!L.q_bias.empty()) {
        std::vector<float> bias = L.q_bias;
        bias.insert(bias.end(), L.k_bias.begin(), L.k_bias.end());
        bias.insert(bias.end(), L.v_bias.begin(), L.v_bias.end());
        TF_RETURN_IF_ERROR(upload(D.qkv_bias, bias));
      }
      TF_RETURN_IF_ERROR(up.matrix({&L.wq, &L.wk, &L.wv}, D.wqkv));
      TF_RETURN_IF_ERROR(up.matrix({&L.wo}, D.wo));
      if (spec_.moe[i]) {
        TF_RETURN_IF_ERROR(moe_.upload(static_cast<int>(i), L.moe, up));
        continue;
      }
      // gate and up interleaved in tiles of 8 rows, so a one-row step's gate_up kernel holds
      // each gate next to its up and stores SwiGLU itself (cuda::norm_matmul_swiglu).
      const int ffn = static_cast<int>(cfg_.intermediate_size);
      TF_RETURN_IF_ERROR(up.matrix({&L.w_gate, &L.w_up}, D.w_gate_up, [ffn](int64_t r) {
        return cuda::interleave_gate_up(static_cast<int>(r), ffn);
      }));
      TF_RETURN_IF_ERROR(up.matrix({&L.w_down}, D.w_down));
    }
    up.done();
    weight_bytes_ = total;
    TF_CUDA_TRY(gemm_.init());
    // RoPE tables for every position the model was trained for (at least 4096), and for the
    // layers with a base of their own (Gemma 3's sliding ones) as the CPU decoder builds them.
    max_pos_ = std::max(cfg_.max_position, 4096);
    TF_RETURN_IF_ERROR(upload_rope(Rope(cfg_), cos_, sin_));
    if (spec_.local_theta > 0) {
      TF_RETURN_IF_ERROR(upload_rope(Rope(cfg_, spec_.local_theta), local_cos_, local_sin_));
    }
    return {};
  }

  Status upload_rope(const Rope& rope, DeviceBuffer& cos_dst, DeviceBuffer& sin_dst) const {
    const int half = rope.half();
    std::vector<float> cos(static_cast<size_t>(max_pos_) * half), sin(cos.size());
    for (int64_t p = 0; p < max_pos_; ++p) rope.at(p, &cos[p * half], &sin[p * half]);
    TF_RETURN_IF_ERROR(upload(cos_dst, cos));
    return upload(sin_dst, sin);
  }

  const checkpoint::ModelConfig& config() const override { return cfg_; }
  size_t weight_bytes() const override { return weight_bytes_; }
  double copy_bandwidth() override;
  ThreadPool* host_pool() override { return cpu_->host_pool(); }
  std::string numerics() const override { return backend::cuda::numerics_name(); }
  bool draws_on_device() const override { return true; }
  bool masks_on_device() const override { return device_masks_; }
  bool kv_in_host_memory() const override { return false; }
  int kv_element_bytes() const override { return 2; }  // the pool is bf16
  Result<int64_t> reserve_steps(const StepLimits& l) override {
    // A graph step pads its rows to a power of two (at most kMaxGraphRows), every one a split
    // row with logits; its splits are those its table's width (the context's blocks rounded up
    // to a power of two) can hold.
    const int64_t graph_rows = std::min<int64_t>(
        static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(l.rows, 1)))),
        static_cast<int64_t>(kMaxGraphRows));
    const int64_t rows = std::max(l.rows, graph_rows);
    const int64_t split_rows = std::max(l.split_rows, graph_rows);
    const int64_t bs = KvCache::kDefaultBlockSize;
    const auto blocks = static_cast<uint64_t>(std::max<int64_t>((l.context + bs - 1) / bs, 1));
    const int max_splits = cuda::attention_max_splits(static_cast<int>(
        std::min<int64_t>(static_cast<int64_t>(std::bit_ceil(blocks)) * bs, int64_t{1} << 30)));
    TF_RETURN_IF_ERROR(size_buffers(static_cast<int>(rows),
                                    static_cast<int>(std::max(l.logit_rows, graph_rows)),
                                    static_cast<int>(split_rows), max_splits));
    // Later steps keep their split rows within these, so the partials never outgrow them.
    split_row_limit_ = static_cast<int>(split_rows);
    TF_CUDA_TRY(stream_.sync());
    size_t free = 0, total = 0;
    TF_CUDA_TRY(cudaMemGetInfo(&free, &total));
    // What grows after this: cuBLASLt's workspace and plans, captured graphs, the draws'
    // scratch, the allocator's rounding.
    const size_t margin = (size_t{1} << 30) + total / 32;
    return static_cast<int64_t>(free > margin ? free - margin : 0);
  }
  std::unique_ptr<KvBlockTransfer> kv_transfer(KvCache& kv) override {
    if (!ensure_kv(kv).ok()) return nullptr;
    return make_cuda_kv_transfer(copier_, kv, stream_.get());
  }
  float* logits_buffer(size_t floats) override {
    if (pinned_floats_ < floats) {
      if (pinned_) cudaFreeHost(pinned_);
      pinned_ = nullptr;
      pinned_floats_ = 0;
      if (cudaHostAlloc(reinterpret_cast<void**>(&pinned_), floats * sizeof(float),
                        cudaHostAllocDefault) != cudaSuccess) {
        return nullptr;  // the caller's pageable buffer still works, only slower
      }
      pinned_floats_ = floats;
    }
    return pinned_;
  }
  ~CudaDecoder() override {
    if (pinned_) cudaFreeHost(pinned_);
  }
  Status forward(std::span<const SeqChunk> batch, KvCache& kv, float* logits) override {
    return step(batch, kv, logits, nullptr, true);
  }
  Status forward_argmax(std::span<const SeqChunk> batch, KvCache& kv, float* logits,
                        int32_t* argmax, bool logits_needed) override {
    return step(batch, kv, logits, argmax, logits_needed);
  }
  // Graph steps overlap (TF_CUDA_OVERLAP=0 turns it off, for side-by-side runs).
  bool overlaps_steps() const override {
    const char* o = std::getenv("TF_CUDA_OVERLAP");
    return graphs_enabled_ && (o == nullptr || std::string_view(o) != "0");
  }
  Status launch_decode(std::span<const SeqChunk> batch, KvCache& kv, bool follow,
                       bool defer_selection) override;
  Status select_queued(std::span<const std::span<const uint32_t>> masks) override;
  Status collect(int32_t* argmax) override;
  void discard_queued() override {
    (void)sync_all();  // its error, if any, belongs to the queued steps being dropped
    pending_.clear();
    deferred_.reset();
  }

 private:
  static constexpr size_t kMaxGraphRows = 512;
  // Chunks of at most this many rows attend by splits, row by row (see queue_step).
  static constexpr int kSplitChunkRows = 16;

  struct Graph {
    cudaGraphExec_t exec = nullptr;
    size_t inputs_end = 0;  // where the inputs it reads ended when captured (they must not move)
    Graph() = default;
    Graph(Graph&& o) noexcept
        : exec(std::exchange(o.exec, nullptr)), inputs_end(o.inputs_end) {}
    Graph& operator=(Graph&&) = delete;
    ~Graph() {
      if (exec) cudaGraphExecDestroy(exec);
    }
  };

  // How a step's rows reach attention: decode rows by splits, prefill chunks by tiles.
  struct AttentionPlan {
    int n_split_rows = 0, n_tiles = 0;
    bool all_rows_split = false;     // graph steps: split rows are rows 0 .. n - 1
    int fixed_splits = 0;            // > 0: launch this many splits; 0: the most a split row needs
    std::vector<int32_t> split_pos;  // eager steps: the split rows' positions
    int n_split_groups = 0;          // > 0: the split rows in groups (layers without a window)
    int group_lines = 16;            // the most lines a group holds (AttentionBatch::group_lines)
  };
  // forward(), and the greedy argmax of each logits row on the GPU when `argmax` is set; the
  // logits are copied back only when `logits_needed`.
  Status step(std::span<const SeqChunk> batch, KvCache& kv, float* logits, int32_t* argmax,
              bool logits_needed);
  // What queue_step() put on the stream.
  struct Queued {
    int n_out = 0;             // logits rows, in logits_
    bool decode_step = false;  // every chunk one token with its logits
    bool graph = false;        // replayed a captured graph
    int slot = 0;              // its inputs and argmaxes (slots_)
  };
  // The end of a queued step: its masked rows' argmaxes taken again under their masks, its
  // draws, then its `ran` event. Queued with the step, or by select_queued() for a deferred one.
  struct Selection {
    int slot = 0;
    int rows = 0;  // argmax rows (a graph step's padding rows included)
    bool decode_step = false;
    int n_draws = 0;
    const cuda::SampleRow* draws = nullptr;  // on the device, in the slot's inputs
  };
  Status queue_selection(const Selection& sel, int n_masked, const int32_t* mask_rows,
                         const uint32_t* masks);
  // Brings the slot's argmaxes back on download_, then its `read` event.
  Status queue_readback(int slot, size_t rows);
  // Lays out the step, uploads its inputs and queues its kernels, without waiting; then the
  // argmax of each logits row into its slot's argmax buffer where `argmax` is set (decode steps
  // always: their graph holds it, and it writes the next step's tokens too). `follow`: the rows'
  // tokens are the argmaxes of the step queued before (whose rows these are, in order), on the
  // device already.
  Status queue_step(std::span<const SeqChunk> batch, KvCache& kv, bool follow, bool argmax,
                    Queued& q, bool defer_selection = false);
  // The step buffers for n rows, n_out logits rows and the split rows' partials (rows
  // 0 .. scratch_rows - 1 of the step, max_splits each).
  Status size_buffers(int n, int n_out, int scratch_rows, int max_splits);
  Status enqueue(int n, int n_out, int bs, int width, const AttentionPlan& plan);

  // Grows a device buffer to at least `bytes` (never shrinks: step shapes repeat); a move bumps
  // gen_, which retires the captured graphs.
  Status grow(DeviceBuffer& b, size_t bytes) {
    if (b.bytes() >= bytes) return {};
    TF_CUDA_TRY(sync_all());  // a queued step may still use the old buffer (or its graph)
    TF_CUDA_TRY(b.allocate(std::max<size_t>(bytes, 256)));
    ++gen_;
    return {};
  }

  // The device pool: the engine's blocks plus one spare block (index num_blocks) that padding
  // rows of graph steps write to.
  Status ensure_kv(const KvCache& kv) {
    if (kv_owner_ == &kv && kv_blocks_ == kv.num_blocks()) return {};
    const size_t per_layer = static_cast<size_t>(kv.num_blocks() + 1) * kv.block_size() *
                             cfg_.num_kv_heads * cfg_.head_dim;
    ++gen_;
    TF_CUDA_TRY(sync_all());
    TF_CUDA_TRY(k_cache_.allocate(per_layer * cfg_.num_layers * sizeof(uint16_t)));
    TF_CUDA_TRY(v_cache_.allocate(per_layer * cfg_.num_layers * sizeof(uint16_t)));
    kv_layer_elems_ = per_layer;
    kv_owner_ = &kv;
    kv_blocks_ = kv.num_blocks();
    const size_t block_row_bytes = static_cast<size_t>(kv.block_size()) * cfg_.num_kv_heads *
                                   cfg_.head_dim * sizeof(uint16_t);
    copier_->set_pool({&kv, k_cache_.get<uint8_t>(), v_cache_.get<uint8_t>(),
                       per_layer * sizeof(uint16_t), block_row_bytes, cfg_.num_layers,
                       kv.num_blocks()});
    return {};
  }

  cudaError_t sync_all() {
    for (const cuda::Stream* st : {&upload_, &stream_, &download_}) {
      if (cudaError_t e = st->sync(); e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }

  std::shared_ptr<DecoderModel> cpu_;        // the checkpoint mapping, spec and host weight views
  // A tensor-parallel rank's part until its weights are uploaded (its column copies are then
  // freed), or null.
  std::shared_ptr<const RankWeights> part_;
  RankExchange* exchange_;                   // where a rank meets the others, or null
  checkpoint::ModelConfig cfg_;
  DecoderSpec spec_;
  CudaMoe moe_;               // the MoE layers' weights and step buffers
  bool has_moe_, has_dense_;  // some layer has experts; some has a dense MLP
  bool has_sandwich_;         // some layer norms its attention or MLP output (Gemma)
  bool capturing_ = false;    // enqueue() is being captured into a graph: nothing may wait
  bool norms_f32_;  // the norm weights are f32 (Gemma), so the fused one-row kernels are off
  bool windowless_;  // no layer has a sliding window: a chunk's split rows can share K/V copies
  int vocab_begin_, vocab_rows_;  // the embedding's and lm_head's rows (a rank's part)
  int rank_;                      // the tensor-parallel rank (0 unsharded)
  cuda::Stream stream_;
  cuda::LtGemm gemm_;  // every matmul: decode kernels for few rows, cuBLASLt for many
  PhaseTimer timer_;
  StepTimer step_timer_;
  // Step graphs (decode and verify) by (rows, table width, slot, kind) bucket; TF_CUDA_GRAPHS=0
  // or TF_CUDA_PROFILE turn them off (the profile's events need eager launches).
  bool graphs_enabled_ = [] {
    const char* g = std::getenv("TF_CUDA_GRAPHS");
    return (g == nullptr || std::string_view(g) != "0") &&
           std::getenv("TF_CUDA_PROFILE") == nullptr;
  }();
  std::map<int64_t, Graph> graphs_;
  // Grammar masks applied here (TF_CUDA_DEVICE_MASKS=0 leaves them to the engine's host draw,
  // for side-by-side runs).
  bool device_masks_ = [] {
    const char* m = std::getenv("TF_CUDA_DEVICE_MASKS");
    return m == nullptr || std::string_view(m) != "0";
  }();
  // The prefill tiles' kernel (the same bits either way): the warp-specialized wgmma kernel where
  // it fits (head dims of 128 on an sm_90 GPU; attention.cu falls back to the mma.sync wide
  // kernel elsewhere), or with TF_CUDA_PREFILL_KERNEL=wide the wide kernel everywhere.
  cuda::TileKernel prefill_kernel_ = [] {
    const char* k = std::getenv("TF_CUDA_PREFILL_KERNEL");
    return k != nullptr && std::string_view(k) == "wide" ? cuda::TileKernel::kWide
                                                          : cuda::TileKernel::kWgmma;
  }();
  // TF_CUDA_PREFILL_GEMM=wgmma: steps of kWgmmaMinRows rows and more run their dense matmuls on
  // gemm_wgmma.cu's kernels where they fit (the parts summed in registers, a gate_up's GLU as its
  // store; the same bits as cuBLASLt's, gpu_test), for side-by-side runs: slower than cuBLASLt at
  // a prompt step's rows on an H100 (docs/benchmarks.md).
  static constexpr int kWgmmaMinRows = 128;
  bool wgmma_gemm_ = [] {
    const char* g = std::getenv("TF_CUDA_PREFILL_GEMM");
    return g != nullptr && std::string_view(g) == "wgmma";
  }();
  uint64_t gen_ = 0, graphs_gen_ = 0;
  DeviceBuffer embed_, output_, out_norm_, cos_, sin_, local_cos_, local_sin_;
  bool tied_ = false;
  int64_t max_pos_ = 0;
  std::vector<DeviceLayer> layers_;
  size_t weight_bytes_ = 0;
  float* pinned_ = nullptr;  // logits_buffer(): page-locked, so the copy back runs at PCIe speed
  size_t pinned_floats_ = 0;
  // The KV pool, bf16 [layer][block * block_size + offset][kv_heads * head_dim], mirroring the
  // engine's KvCache block numbering.
  const KvCache* kv_owner_ = nullptr;
  int64_t kv_blocks_ = 0;
  // Split rows an eager step may have: those reserve_steps sized the partials for (no bound
  // until it runs).
  int split_row_limit_ = std::numeric_limits<int>::max();
  size_t kv_layer_elems_ = 0;
  DeviceBuffer k_cache_, v_cache_;
  // The prompt cache's block copies to and from pinned host memory (kv_transfer); steps wait for
  // its step lane on the device.
  std::shared_ptr<cuda::KvBlockCopier> copier_ = std::make_shared<cuda::KvBlockCopier>();
  // Per-step buffers, grown as needed.
  // Where the current step's inputs sit on the device (in its slot's buffer).
  struct StepInputs {
    int32_t *tokens = nullptr, *pos = nullptr, *row_seq = nullptr, *tables = nullptr;
    int32_t *out_rows = nullptr, *split_rows = nullptr, *split_groups = nullptr;
    int64_t* slots = nullptr;
    cuda::AttentionTile* tiles = nullptr;
  } in_;
  // Steps alternate between two slots of inputs and argmaxes, so the copies stay off the GPU's
  // path from one step to the next: a step's inputs go up on upload_ (one copy from pinned staging)
  // while the step before runs, and its argmaxes come back on download_ while the next one runs.
  // Each slot has a graph per bucket; a slot's graph writes its argmaxes as the other slot's
  // tokens (at offset 0 of its inputs), which a following step then reads without a copy.
  struct Slot {
    DeviceBuffer inputs, argmax;
    cuda::PinnedBuffer staging, argmax_host;
    cuda::Event uploaded, ran, read;  // inputs in place; step done; argmaxes on the host
    // A deferred selection's masks: their row ids, then the words of each row.
    DeviceBuffer masks;
    cuda::PinnedBuffer mask_staging;
    cuda::Event masks_up;
  };
  Slot slots_[2];
  int slot_ = 0;  // the next step's
  cuda::Stream upload_, download_;
  DeviceBuffer attn_scratch_;
  DeviceBuffer attn_counters_;   // zeroed when allocated; attention leaves it zeroed
  DeviceBuffer draw_scratch_;    // the device draws' masses
  DeviceBuffer argmax_scratch_;  // likewise, for the argmax's blocks per row
  DeviceBuffer x_, x2_, h_, qkv_f32_, q_, att_, o_, gu_, act_, down_, xg_, hg_, logits_;
  DeviceBuffer rank_logits_;  // a rank's logits columns, before the ranks' gather
  DeviceBuffer normed_;  // a sandwich norm's output (Gemma)
  // The dense matmuls' K parts, computed at once for steps of few rows (LtGemm::kBatchedMaxRows);
  // TF_CUDA_BATCHED_PARTS=0 chains them instead (the same bits), for side-by-side runs.
  DeviceBuffer parts_;
  bool batched_parts_ = [] {
    const char* b = std::getenv("TF_CUDA_BATCHED_PARTS");
    return b == nullptr || std::string_view(b) != "0";
  }();
  // Overlapped steps queued, oldest first.
  struct Pending {
    int slot = 0;
    size_t rows = 0;
    bool selected = true;  // false until a deferred step's select_queued()
  };
  std::deque<Pending> pending_;
  std::optional<Selection> deferred_;  // the newest queued step, waiting for its masks
};

Status CudaDecoder::step(std::span<const SeqChunk> batch, KvCache& kv, float* logits,
                         int32_t* argmax, bool logits_needed) {
  if (!pending_.empty()) return make_error(ErrorCode::kInternal, "overlapped steps are queued");
  step_timer_.mark(0);
  Queued q;
  TF_RETURN_IF_ERROR(queue_step(batch, kv, false, argmax != nullptr, q));
  cudaStream_t s = stream_.get();
  const int n_out = q.n_out;
  if (q.n_out > 0) step_timer_.event(2, s);  // an empty step queued nothing to time
  if (n_out > 0 && argmax != nullptr) {
    TF_CUDA_TRY(cudaMemcpyAsync(argmax, slots_[q.slot].argmax.get(),
                                static_cast<size_t>(n_out) * sizeof(int32_t),
                                cudaMemcpyDeviceToHost, s));
  }
  if (n_out > 0 && logits_needed) {
    TF_CUDA_TRY(cudaMemcpyAsync(logits, logits_.get(),
                                static_cast<size_t>(n_out) * cfg_.vocab_size * sizeof(float),
                                cudaMemcpyDeviceToHost, s));
    timer_.mark("logits", s);
  }
  timer_.finish(q.decode_step ? "decode" : "prefill");
  TF_CUDA_TRY(stream_.sync());
  step_timer_.mark(2);
  step_timer_.finish(q.graph && q.n_out > 0);
  return {};
}

// A device-to-device copy on the model's stream, timed between events.
double CudaDecoder::copy_bandwidth() {
  const size_t bytes = size_t{256} << 20;
  DeviceBuffer from, to;
  cudaEvent_t start = nullptr, end = nullptr;
  double best = 0;
  if (from.allocate(bytes) == cudaSuccess && to.allocate(bytes) == cudaSuccess &&
      cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&end) == cudaSuccess) {
    cudaStream_t s = stream_.get();
    for (int rep = 0; rep < 6; ++rep) {  // the first warms up
      float ms = 0;
      if (cudaEventRecord(start, s) != cudaSuccess ||
          cudaMemcpyAsync(to.get(), from.get(), bytes, cudaMemcpyDeviceToDevice, s) !=
              cudaSuccess ||
          cudaEventRecord(end, s) != cudaSuccess || cudaEventSynchronize(end) != cudaSuccess ||
          cudaEventElapsedTime(&ms, start, end) != cudaSuccess) {
        break;
      }
      if (rep > 0 && ms > 0) best = std::max(best, 2.0 * static_cast<double>(bytes) / (ms * 1e-3));
    }
  }
  if (start != nullptr) cudaEventDestroy(start);
  if (end != nullptr) cudaEventDestroy(end);
  (void)cudaGetLastError();  // a failed measurement leaves no error for the next launch
  return best;
}

Status CudaDecoder::launch_decode(std::span<const SeqChunk> batch, KvCache& kv, bool follow,
                                  bool defer_selection) {
  if (pending_.size() >= 2 || deferred_) {
    return make_error(ErrorCode::kInternal, "two steps are queued already");
  }
  if (follow && (pending_.empty() || pending_.back().rows != batch.size())) {
    return make_error(ErrorCode::kInternal, "a following step needs the step before's rows");
  }
  bool decode_rows = !batch.empty();
  for (const SeqChunk& c : batch)
    decode_rows = decode_rows && c.tokens.size() == 1 && c.n_logits == 1;
  if (!decode_rows) return make_error(ErrorCode::kInternal, "launch_decode takes decode rows");
  Queued q;
  TF_RETURN_IF_ERROR(queue_step(batch, kv, follow, true, q, defer_selection));
  pending_.push_back({q.slot, batch.size(), !defer_selection});
  return defer_selection ? Status{} : queue_readback(q.slot, batch.size());
}

Status CudaDecoder::queue_readback(int slot, size_t rows) {
  // The slot's previous step was read before this launch (at most one other is queued).
  Slot& sl = slots_[slot];
  const size_t bytes = rows * sizeof(int32_t);
  if (sl.argmax_host.bytes() < bytes) {
    TF_CUDA_TRY(sl.argmax_host.allocate(std::max<size_t>(bytes, 256)));
  }
  cudaStream_t down = download_.get();
  TF_CUDA_TRY(cudaStreamWaitEvent(down, sl.ran.get(), 0));
  TF_CUDA_TRY(
      cudaMemcpyAsync(sl.argmax_host.get(), sl.argmax.get(), bytes, cudaMemcpyDeviceToHost, down));
  TF_CUDA_TRY(cudaEventRecord(sl.read.get(), down));
  return {};
}

// The masks go up on upload_ from the slot's pinned staging (its last reader, the slot's step
// before, has run), and the compute stream waits for them behind the deferred step's forward.
Status CudaDecoder::select_queued(std::span<const std::span<const uint32_t>> masks) {
  if (!deferred_ || pending_.empty()) {
    return make_error(ErrorCode::kInternal, "no step waits for its masks");
  }
  const Selection sel = *deferred_;
  deferred_.reset();
  const size_t words = (static_cast<size_t>(cfg_.vocab_size) + 31) / 32;
  std::vector<int32_t> rows;
  for (size_t i = 0; i < masks.size(); ++i) {
    if (!masks[i].empty()) rows.push_back(static_cast<int32_t>(i));
  }
  Slot& sl = slots_[sel.slot];
  const size_t at_words = (rows.size() * sizeof(int32_t) + 15) & ~size_t{15};
  const size_t bytes = at_words + rows.size() * words * sizeof(uint32_t);
  if (!rows.empty()) {
    if (sl.mask_staging.bytes() < bytes) TF_CUDA_TRY(sl.mask_staging.allocate(2 * bytes));
    if (sl.masks.bytes() < bytes) {  // no graph refers to it: no generation to retire
      TF_CUDA_TRY(sync_all());
      TF_CUDA_TRY(sl.masks.allocate(2 * bytes));
    }
    auto* host = sl.mask_staging.get<std::byte>();
    std::memcpy(host, rows.data(), rows.size() * sizeof(int32_t));
    auto* w = reinterpret_cast<uint32_t*>(host + at_words);
    for (size_t r = 0; r < rows.size(); ++r) {
      const auto m = masks[static_cast<size_t>(rows[r])];
      std::fill_n(w + r * words, words, 0u);
      std::copy_n(m.begin(), std::min(m.size(), words), w + r * words);
    }
    cudaStream_t up = upload_.get();
    TF_CUDA_TRY(cudaStreamWaitEvent(up, sl.ran.get(), 0));
    TF_CUDA_TRY(cudaMemcpyAsync(sl.masks.get(), host, bytes, cudaMemcpyHostToDevice, up));
    TF_CUDA_TRY(cudaEventRecord(sl.masks_up.get(), up));
    TF_CUDA_TRY(cudaStreamWaitEvent(stream_.get(), sl.masks_up.get(), 0));
  }
  auto* base = sl.masks.get<std::byte>();
  TF_RETURN_IF_ERROR(queue_selection(sel, static_cast<int>(rows.size()),
                                     reinterpret_cast<const int32_t*>(base),
                                     reinterpret_cast<const uint32_t*>(base + at_words)));
  pending_.back().selected = true;
  return queue_readback(sel.slot, pending_.back().rows);
}

Status CudaDecoder::collect(int32_t* argmax) {
  if (pending_.empty()) return make_error(ErrorCode::kInternal, "no step is queued");
  if (!pending_.front().selected) {
    return make_error(ErrorCode::kInternal, "the oldest step waits for its masks");
  }
  const Pending p = pending_.front();
  pending_.pop_front();
  const auto wait_start = StepTimer::Clock::now();
  TF_CUDA_TRY(cudaEventSynchronize(slots_[p.slot].read.get()));
  step_timer_.collected(wait_start);
  std::memcpy(argmax, slots_[p.slot].argmax_host.get(), p.rows * sizeof(int32_t));
  return {};
}

Status CudaDecoder::queue_step(std::span<const SeqChunk> batch, KvCache& kv, bool follow,
                               bool argmax, Queued& q, bool defer_selection) {
  TF_RETURN_IF_ERROR(validate_batch(batch, kv, cfg_));
  TF_RETURN_IF_ERROR(ensure_kv(kv));
  TF_CUDA_TRY(copier_->order_before(stream_.get()));
  const int bs = kv.block_size();
  std::vector<int32_t> tokens, pos, row_seq, out_rows, tables;
  std::vector<int64_t> slots;
  int max_blocks = 1;
  size_t n_tokens = 0;
  for (const auto& c : batch) {
    const int64_t len = static_cast<int64_t>(c.tokens.size());
    max_blocks = std::max<int>(max_blocks, static_cast<int>((c.pos0 + len + bs - 1) / bs));
    n_tokens += c.tokens.size();
  }
  // A step of short chunks that want every row's logits (decode rows, and a verify step's rows
  // with their drafts) replays a CUDA graph captured for its bucket: rows padded to a power of
  // two with rows that write to the spare KV block, and block tables padded to a power-of-two
  // width. Padding rows never touch real rows, and a real row's arithmetic is the same as in an
  // eager step (every row a split row, as it is eagerly for chunks this short), so outputs do
  // not change. A decode step (one token per sequence) also leaves its tokens for a following one.
  bool decode_step = n_tokens == batch.size(), short_rows = true;
  for (const auto& c : batch) {
    decode_step = decode_step && c.n_logits == 1;
    short_rows = short_rows && static_cast<size_t>(c.n_logits) == c.tokens.size() &&
                 c.tokens.size() <= static_cast<size_t>(kSplitChunkRows);
  }
  const bool graph = graphs_enabled_ && short_rows && n_tokens <= kMaxGraphRows;
  q.decode_step = decode_step;
  q.graph = graph;
  const int width =
      graph ? static_cast<int>(std::bit_ceil(static_cast<unsigned>(max_blocks))) : max_blocks;
  for (size_t s = 0; s < batch.size(); ++s) {
    const SeqChunk& c = batch[s];
    const int64_t len = static_cast<int64_t>(c.tokens.size());
    if (c.pos0 + len > max_pos_) {
      return make_error(ErrorCode::kInvalidArgument, "position {} past the RoPE table of {}",
                        c.pos0 + len - 1, max_pos_);
    }
    const int64_t row0 = static_cast<int64_t>(tokens.size());
    for (int64_t i = 0; i < len; ++i) {
      const int64_t p = c.pos0 + i;
      tokens.push_back(c.tokens[i]);
      pos.push_back(static_cast<int32_t>(p));
      row_seq.push_back(static_cast<int32_t>(s));
      slots.push_back(static_cast<int64_t>(c.block_table[p / bs]) * bs + p % bs);
    }
    for (int64_t i = len - c.n_logits; i < len; ++i) {
      out_rows.push_back(static_cast<int32_t>(row0 + i));
    }
    const int64_t blocks = (c.pos0 + len + bs - 1) / bs;
    for (int b = 0; b < width; ++b) tables.push_back(b < blocks ? c.block_table[b] : 0);
  }
  const int n = static_cast<int>(tokens.size()), n_out = static_cast<int>(out_rows.size());
  q.n_out = n_out;
  if (n == 0) return {};
  // The rows drawn here (SeqChunk::draw, row_draws): their tokens replace their argmaxes. The
  // rows masked here (SeqChunk::mask, row_masks): their disallowed logits become -inf before the
  // argmax and the draws.
  std::vector<cuda::SampleRow> draws;
  std::vector<int32_t> mask_rows;
  std::vector<uint32_t> masks;
  const size_t words = (static_cast<size_t>(cfg_.vocab_size) + 31) / 32;
  for (int s = 0, out_row = 0; s < static_cast<int>(batch.size()); ++s) {
    const SeqChunk& c = batch[s];
    if (argmax && c.draw && c.n_logits == 1) {
      draws.push_back(
          {c.draw->temperature, c.draw->top_k, c.draw->top_p, c.draw->min_p, c.draw->u, out_row});
    }
    for (size_t i = 0; argmax && i < c.row_draws.size() && i < static_cast<size_t>(c.n_logits);
         ++i) {
      const model::DeviceDraw& d = c.row_draws[i];
      draws.push_back(
          {d.temperature, d.top_k, d.top_p, d.min_p, d.u, out_row + static_cast<int>(i)});
    }
    auto add_mask = [&](std::span<const uint32_t> mask, int row) {
      mask_rows.push_back(row);
      masks.resize(masks.size() + words, 0);
      std::copy_n(mask.begin(), std::min(mask.size(), words), masks.end() - words);
    };
    if (argmax && device_masks_ && !c.mask.empty() && c.n_logits == 1) add_mask(c.mask, out_row);
    for (size_t i = 0;
         argmax && device_masks_ && i < c.row_masks.size() && i < static_cast<size_t>(c.n_logits);
         ++i) {
      if (!c.row_masks[i].empty()) add_mask(c.row_masks[i], out_row + static_cast<int>(i));
    }
    out_row += static_cast<int>(c.n_logits);
  }
  const int n_run = graph ? static_cast<int>(std::bit_ceil(static_cast<unsigned>(n))) : n;
  const auto n_seqs = static_cast<int>(batch.size());
  for (int r = n; r < n_run; ++r) {  // padding rows: token 0 at position 0 in the spare block
    tokens.push_back(0);
    pos.push_back(0);
    row_seq.push_back(n_seqs + r - n);  // each its own table, after the sequences'
    slots.push_back(static_cast<int64_t>(kv_blocks_) * bs);
    out_rows.push_back(r);
    for (int b = 0; b < width; ++b) tables.push_back(static_cast<int32_t>(kv_blocks_));
  }
  // A graph reads its inputs at the offsets it was captured with, so their sizes must depend on
  // its bucket alone: a table a row (a verify step's sequences have fewer), the rest unused.
  if (graph) tables.resize(static_cast<size_t>(n_run) * width, static_cast<int32_t>(kv_blocks_));
  const int n_out_run = graph ? n_run : n_out;
  // Attention: a sequence with up to kSplitChunkRows rows in the step (a decode row, a verify
  // step's drafts, a resumed prompt's last few tokens) has split rows, each walking its own
  // positions in splits as if decoding alone (the same bits as tiles); longer chunks are cut into
  // tiles, the last rows first (the most positions to walk start earliest). A tile walks every
  // position of its rows in one block, so a short chunk at a long context (10 rows at 32K took
  // 40 ms) waits on one block's walk. Graph steps launch every split a table of this width can
  // hold (blocks past a row's own splits exit at once); eager steps compute it per layer from the
  // split rows' positions.
  AttentionPlan plan;
  std::vector<cuda::AttentionTile> tiles;
  std::vector<int32_t> split_rows, split_groups;
  const int group = cfg_.num_heads / cfg_.num_kv_heads;
  if (graph) {
    plan.all_rows_split = true;
    plan.n_split_rows = n_run;
    plan.fixed_splits = cuda::attention_max_splits(width * bs);
    if (!decode_step && windowless_) {
      // A verify step's rows of one sequence share K/V copies as eagerly; the graph launches
      // n_run groups, and the ones past the step's (no rows) exit at once.
      std::vector<int32_t> all(static_cast<size_t>(n_run));
      std::iota(all.begin(), all.end(), 0);
      split_groups = cuda::attention_split_groups(all, pos, row_seq, 0, group);
      split_groups.resize(all.size(), 0);
      plan.n_split_groups = n_run;
    }
  } else {
    const int tile_rows = cuda::attention_tile_rows(group);
    int row0 = 0;
    for (const SeqChunk& c : batch) {
      const int len = static_cast<int>(c.tokens.size());
      // A short chunk past the rows reserve_steps gave partials to runs as tiles (the same bits;
      // a long context's walk then waits on one block).
      const bool split = len <= kSplitChunkRows && row0 + len <= split_row_limit_;
      for (int r = row0; split && r < row0 + len; ++r) {
        split_rows.push_back(r);
        plan.split_pos.push_back(pos[r]);
      }
      for (int end = len; !split && end > 0; end -= tile_rows) {
        const int start = std::max(0, end - tile_rows);
        tiles.push_back({row0 + start, end - start});
      }
      row0 += len;
    }
    plan.n_split_rows = static_cast<int>(split_rows.size());
    plan.n_tiles = static_cast<int>(tiles.size());
    // A chunk's split rows share their K/V copies in groups (the same bits as alone); the groups
    // are those of a layer without a sliding window, which every layer of such a model is.
    // Up to 64 lines a group (a resumed prompt's last 16 rows at 4 heads per KV head read the
    // KV once, not four times), a warp per 16.
    if (!split_rows.empty() && windowless_) {
      split_groups =
          cuda::attention_split_groups(split_rows, pos, row_seq, 0, group, cuda::kMaxGroupLines);
      if (split_groups.size() < split_rows.size()) {
        plan.n_split_groups = static_cast<int>(split_groups.size());
        for (int32_t g : split_groups) {
          plan.group_lines = std::max(plan.group_lines, (g >> 24) * group);
        }
      } else {
        split_groups.clear();  // every group one row: the plain launch
      }
    }
  }
  int splits_bound = plan.fixed_splits;
  for (int32_t p : plan.split_pos) {
    splits_bound = std::max(splits_bound, cuda::attention_max_splits(p + 1));
  }

  cudaStream_t s = stream_.get();
  // One copy takes the inputs up. The tokens come first, so a following step can leave them out:
  // the step before's argmax kernel wrote them there.
  size_t bytes = 0;
  auto place = [&](const auto& v) {
    const size_t at = bytes;
    bytes += (v.size() * sizeof(v[0]) + 15) & ~size_t{15};
    return at;
  };
  const size_t at_tokens = place(tokens), at_pos = place(pos), at_slots = place(slots),
               at_row_seq = place(row_seq), at_tables = place(tables), at_out = place(out_rows),
               at_split = place(split_rows), at_groups = place(split_groups),
               at_tiles = place(tiles), at_draws = place(draws),
               at_mask_rows = place(mask_rows), at_masks = place(masks);
  const int j = slot_;
  slot_ ^= 1;
  q.slot = j;
  Slot& sl = slots_[j];
  Slot& other = slots_[j ^ 1];
  // This slot's last step was read before this one's launch, so its staging is free.
  if (sl.staging.bytes() < bytes) TF_CUDA_TRY(sl.staging.allocate(2 * bytes));
  auto* host = sl.staging.get<std::byte>();
  auto put = [&](size_t at, const auto& v) {
    if (!v.empty()) std::memcpy(host + at, v.data(), v.size() * sizeof(v[0]));
  };
  put(at_tokens, tokens);
  put(at_pos, pos);
  put(at_slots, slots);
  put(at_row_seq, row_seq);
  put(at_tables, tables);
  put(at_out, out_rows);
  put(at_split, split_rows);
  put(at_groups, split_groups);
  put(at_tiles, tiles);
  put(at_draws, draws);
  put(at_mask_rows, mask_rows);
  put(at_masks, masks);
  const uint64_t gen_before = gen_;
  TF_RETURN_IF_ERROR(grow(sl.inputs, bytes));  // both alike: each slot's graph writes the other's
  const bool moved = gen_ != gen_before;
  TF_RETURN_IF_ERROR(grow(other.inputs, bytes));
  size_t from = 0;
  if (follow && !moved) {
    from = at_pos;
  } else if (follow) {  // the buffer moved (after waiting for the queue): take the argmaxes up
    std::memcpy(host + at_tokens, slots_[pending_.back().slot].argmax_host.get(),
                static_cast<size_t>(n) * sizeof(int32_t));
  }
  // The copy waits for this slot's last step (its inputs' last reader) and, where it brings the
  // tokens, for the other slot's (whose argmax kernel writes them); both have run by now in the
  // engine's order, so neither wait delays the copy.
  cudaStream_t up = upload_.get();
  TF_CUDA_TRY(cudaStreamWaitEvent(up, sl.ran.get(), 0));
  if (from == 0) TF_CUDA_TRY(cudaStreamWaitEvent(up, other.ran.get(), 0));
  step_timer_.event(0, up);
  TF_CUDA_TRY(cudaMemcpyAsync(sl.inputs.get<std::byte>() + from, host + from, bytes - from,
                              cudaMemcpyHostToDevice, up));
  TF_CUDA_TRY(cudaEventRecord(sl.uploaded.get(), up));
  TF_CUDA_TRY(cudaStreamWaitEvent(s, sl.uploaded.get(), 0));
  step_timer_.event(1, s);
  auto* base = sl.inputs.get<std::byte>();
  in_.tokens = reinterpret_cast<int32_t*>(base + at_tokens);
  in_.pos = reinterpret_cast<int32_t*>(base + at_pos);
  in_.slots = reinterpret_cast<int64_t*>(base + at_slots);
  in_.row_seq = reinterpret_cast<int32_t*>(base + at_row_seq);
  in_.tables = reinterpret_cast<int32_t*>(base + at_tables);
  in_.out_rows = reinterpret_cast<int32_t*>(base + at_out);
  in_.split_rows = reinterpret_cast<int32_t*>(base + at_split);
  in_.split_groups = reinterpret_cast<int32_t*>(base + at_groups);
  in_.tiles = reinterpret_cast<cuda::AttentionTile*>(base + at_tiles);
  // The split rows' partials are indexed by row: rows up to the last split row need them, not the
  // prompt chunks after it (a step's decode rows come first).
  const int scratch_rows = graph ? n_run : split_rows.empty() ? 0 : split_rows.back() + 1;
  TF_RETURN_IF_ERROR(size_buffers(n_run, n_out_run, scratch_rows, std::max(splits_bound, 1)));
  // The draws' parameters came up with the inputs (from pinned staging: a pageable copy on the
  // compute stream could hold the host until the queued steps before it ran). Their masses'
  // scratch grows in powers of two of rows; no graph refers to it.
  const auto* draw_params = reinterpret_cast<const cuda::SampleRow*>(base + at_draws);
  if (const size_t need = std::bit_ceil(draws.size()) * cfg_.vocab_size * 8;
      !draws.empty() && draw_scratch_.bytes() < need) {
    TF_CUDA_TRY(sync_all());
    TF_CUDA_TRY(draw_scratch_.allocate(need));
  }

  // Each row's argmax; a decode step's also become the other slot's tokens (a following step's).
  auto queue_argmax = [&](int rows) {
    return cuda::argmax_rows(logits_.get<float>(), rows, cfg_.vocab_size, sl.argmax.get<int32_t>(),
                             s, decode_step ? other.inputs.get<int32_t>() : nullptr,
                             argmax_scratch_.get());
  };
  step_timer_.mark(1);
  if (!graph) {
    TF_RETURN_IF_ERROR(enqueue(n, n_out, bs, max_blocks, plan));
    if (argmax && n_out > 0 && mask_rows.empty()) {  // masked: the selection takes them
      TF_CUDA_TRY(queue_argmax(n_out));
      timer_.mark("argmax", s);
    }
  } else {
    if (graphs_gen_ != gen_) {  // a buffer moved: every captured graph points at stale memory
      graphs_.clear();
      graphs_gen_ = gen_;
    }
    // Decode graphs' argmaxes also write the other slot's tokens; verify graphs' do not.
    const int64_t key = ((static_cast<int64_t>(n_run) << 32 | width) << 1 | j) << 1 | decode_step;
    auto it = graphs_.find(key);
    if (it == graphs_.end()) {
      TF_CUDA_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
      capturing_ = true;
      Status st = enqueue(n_run, n_run, bs, width, plan);
      capturing_ = false;
      if (st.ok()) {
        const cudaError_t e = queue_argmax(n_run);
        if (e != cudaSuccess)
          st = make_error(ErrorCode::kInternal, "CUDA: {}", cudaGetErrorString(e));
      }
      cudaGraph_t graph = nullptr;
      const cudaError_t end = cudaStreamEndCapture(s, &graph);
      TF_RETURN_IF_ERROR(st);
      TF_CUDA_TRY(end);
      Graph g;
      g.inputs_end = at_draws;
      const cudaError_t inst = cudaGraphInstantiate(&g.exec, graph, 0);
      cudaGraphDestroy(graph);
      TF_CUDA_TRY(inst);
      it = graphs_.emplace(key, std::move(g)).first;
    }
    if (it->second.inputs_end != at_draws) {
      return make_error(ErrorCode::kInternal, "a step graph's inputs moved ({} -> {} bytes)",
                        it->second.inputs_end, at_draws);
    }
    TF_CUDA_TRY(cudaGraphLaunch(it->second.exec, s));  // the selection redoes masked rows
  }
  const Selection sel{j, graph ? n_run : n_out, decode_step, static_cast<int>(draws.size()),
                      draw_params};
  if (defer_selection) {
    deferred_ = sel;
    return {};
  }
  return queue_selection(sel, static_cast<int>(mask_rows.size()),
                         reinterpret_cast<const int32_t*>(base + at_mask_rows),
                         reinterpret_cast<const uint32_t*>(base + at_masks));
}

Status CudaDecoder::queue_selection(const Selection& sel, int n_masked, const int32_t* mask_rows,
                                    const uint32_t* masks) {
  cudaStream_t s = stream_.get();
  Slot& sl = slots_[sel.slot];
  Slot& other = slots_[sel.slot ^ 1];
  // A decode step's argmaxes and draws also become the other slot's tokens (a following step's).
  int32_t* next_tokens = sel.decode_step ? other.inputs.get<int32_t>() : nullptr;
  if (n_masked > 0) {  // the argmaxes of every row again, the masked ones over -inf logits
    TF_CUDA_TRY(cuda::mask_logits(logits_.get<float>(), n_masked, cfg_.vocab_size, mask_rows,
                                  masks, s));
    TF_CUDA_TRY(cuda::argmax_rows(logits_.get<float>(), sel.rows, cfg_.vocab_size,
                                  sl.argmax.get<int32_t>(), s, next_tokens,
                                  argmax_scratch_.get()));
  }
  if (sel.n_draws > 0) {
    TF_CUDA_TRY(cuda::sample_rows(logits_.get<float>(), sel.n_draws, cfg_.vocab_size, sel.draws,
                                  draw_scratch_.get<uint64_t>(), sl.argmax.get<int32_t>(), s,
                                  next_tokens));
  }
  TF_CUDA_TRY(cudaEventRecord(sl.ran.get(), s));
  return {};
}

Status CudaDecoder::size_buffers(int n, int n_out, int scratch_rows, int max_splits) {
  const int d = cfg_.hidden_size, hd = cfg_.head_dim, f = cfg_.intermediate_size;
  const int q_dim = cfg_.num_heads * hd, kv_dim = cfg_.num_kv_heads * hd;
  const size_t rows = static_cast<size_t>(n), qkv_dim = q_dim + 2 * kv_dim;
  TF_RETURN_IF_ERROR(grow(x_, rows * d * 4));
  TF_RETURN_IF_ERROR(grow(x2_, static_cast<size_t>(d) * 4));  // the fused norms' other residual
  TF_RETURN_IF_ERROR(grow(h_, rows * d * 2));
  TF_RETURN_IF_ERROR(grow(qkv_f32_, rows * qkv_dim * 4));
  TF_RETURN_IF_ERROR(grow(q_, rows * q_dim * 2));
  TF_RETURN_IF_ERROR(grow(att_, rows * q_dim * 2));
  TF_RETURN_IF_ERROR(grow(o_, rows * d * 4));
  if (has_dense_) {  // the dense MLP's (MoE layers have buffers of their own)
    TF_RETURN_IF_ERROR(grow(gu_, rows * 2 * f * 4));
    TF_RETURN_IF_ERROR(grow(act_, rows * f * 2));
  }
  TF_RETURN_IF_ERROR(grow(down_, rows * d * 4));
  if (batched_parts_) {
    // Every matmul given parts_: qkv, o, down and gate_up (in parts where 2 ffn < kWideN, as on
    // a tensor-parallel rank of Llama-3.1-8B).
    const size_t gate_up = has_dense_ ? cuda::LtGemm::part_scratch_bytes(n, 2 * f, d) : 0;
    TF_RETURN_IF_ERROR(
        grow(parts_, std::max({cuda::LtGemm::part_scratch_bytes(n, qkv_dim, d),
                               cuda::LtGemm::part_scratch_bytes(n, d, q_dim),
                               cuda::LtGemm::part_scratch_bytes(n, d, f), gate_up})));
  }
  if (has_moe_) {
    TF_ASSIGN_OR_RETURN(const bool moved, moe_.reserve(n, stream_));
    if (moved) ++gen_;  // reserve() waited for the stream; graphs that used them are stale
  }
  if (has_sandwich_) TF_RETURN_IF_ERROR(grow(normed_, rows * d * 4));
  TF_RETURN_IF_ERROR(grow(
      attn_scratch_, cuda::attention_scratch_bytes(scratch_rows, cfg_.num_heads, hd, max_splits)));
  const size_t counter_bytes = cuda::attention_counter_bytes(n, cfg_.num_kv_heads);
  if (attn_counters_.bytes() < counter_bytes) {
    TF_RETURN_IF_ERROR(grow(attn_counters_, counter_bytes));
    TF_CUDA_TRY(cudaMemsetAsync(attn_counters_.get(), 0, attn_counters_.bytes(), stream_.get()));
  }
  const size_t outs = static_cast<size_t>(std::max(n_out, 1));
  TF_RETURN_IF_ERROR(grow(xg_, outs * d * 4));
  TF_RETURN_IF_ERROR(grow(hg_, outs * d * 2));
  TF_RETURN_IF_ERROR(grow(logits_, outs * cfg_.vocab_size * 4));
  if (exchange_ != nullptr) TF_RETURN_IF_ERROR(grow(rank_logits_, outs * vocab_rows_ * 4));
  for (Slot& sl : slots_) TF_RETURN_IF_ERROR(grow(sl.argmax, outs * sizeof(int32_t)));
  if (argmax_scratch_.bytes() == 0) {
    TF_RETURN_IF_ERROR(grow(argmax_scratch_, cuda::argmax_scratch_bytes()));
    TF_CUDA_TRY(cudaMemsetAsync(argmax_scratch_.get(), 0, argmax_scratch_.bytes(), stream_.get()));
  }
  return {};
}

// The step's kernels, all on the stream and none allocating (so a graph can capture them).
Status CudaDecoder::enqueue(int n, int n_out, int bs, int width, const AttentionPlan& plan) {
  const int d = cfg_.hidden_size, hd = cfg_.head_dim, f = cfg_.intermediate_size;
  const int q_dim = cfg_.num_heads * hd, kv_dim = cfg_.num_kv_heads * hd;
  const int qkv_dim = q_dim + 2 * kv_dim, vocab = cfg_.vocab_size;
  cudaStream_t s = stream_.get();
  auto* x = x_.get<float>();
  auto* h = h_.get<bf16>();
  auto* down = down_.get<float>();
  // null until a step of few enough rows grew it: the matmuls then chain their parts.
  float* parts = parts_.bytes() > 0 ? parts_.get<float>() : nullptr;
  timer_.mark("start", s);
  TF_CUDA_TRY(cuda::embedding(embed_.get<bf16>(), in_.tokens, x, n, d, s, spec_.embed_scale,
                              vocab_begin_, vocab_rows_));
  // A rank's embedding has its vocabulary's rows and zeros elsewhere: the sum is each token's.
  auto all_reduce = [&](float* buf) -> Status {
    if (exchange_ == nullptr) return {};
    return exchange_->all_reduce(rank_, buf, static_cast<size_t>(n) * d, s);
  };
  TF_RETURN_IF_ERROR(all_reduce(x));
  timer_.mark("embed", s);
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  const float scale =
      spec_.attn_scale > 0 ? spec_.attn_scale : 1.0f / std::sqrt(static_cast<float>(hd));
  const cuda::QkvParams qp{cfg_.num_heads,
                           cfg_.num_kv_heads,
                           hd,
                           cfg_.rope_dim > 0 ? cfg_.rope_dim : hd,
                           cfg_.rope_style == checkpoint::RopeStyle::kInterleaved,
                           eps};
  // The qkv kernel's step-wide inputs; the per-layer ones are set in the loop.
  cuda::QkvTensors qt;
  qt.pos = in_.pos;
  qt.slots = in_.slots;
  qt.q_out = q_.get<bf16>();
  // The most splits a split row needs under a layer's window, recomputed only when the window
  // differs from the layer before's (a model's layers have one or two).
  int memo_window = -1, memo_splits = 1;
  auto splits_for = [&](int window) {
    if (window != memo_window) {
      memo_window = window;
      memo_splits = 1;
      for (int32_t p : plan.split_pos) {
        memo_splits = std::max(memo_splits, cuda::attention_splits(window, p));
      }
    }
    return memo_splits;
  };
  // One row (a single sequence decoding): each norm runs inside the matmul that reads it
  // (cuda::norm_matmul, same bits), and the residual moves between x_ and x2_ (the fused kernel
  // reads one and writes the other). A matrix the row kernels cannot take (N % 8 != 0, say a
  // vocabulary) keeps the norm apart, which leaves the residual in x as well.
  // Not with f32 norm weights (Gemma's), which those kernels do not read.
  auto fuse_norm = [&](int cols) {
    return n == 1 && !norms_f32_ && d <= cuda::kNormMatmulMaxK && cuda::row_matmul_fits(cols, d);
  };
  // Likewise SwiGLU runs inside gate_up (its store), and down reads its row as o does.
  const bool fuse_swiglu = spec_.act == Activation::kSilu && fuse_norm(2 * f),
             row_down = n == 1 && cuda::row_matmul_fits(d, f);
  // and the o projection stages its input row in shared memory the same way.
  const bool row_o = n == 1 && cuda::row_matmul_fits(d, q_dim);
  // Many rows and a gate_up of one part (a wide one): its projection is stored as bf16, not f32
  // (half the bytes written and read back by the GLU; the same bits, gpu_test).
  const bool gate_up_bf16 =
      !fuse_norm(2 * f) && n >= cuda::LtGemm::kMinRows && cuda::matmul_parts(d, 2 * f) == 1;
  float* x_other = x2_.get<float>();
  // resid (+ delta) -> RMSNorm with norm_w -> y = w . normed: the residual ends up in x.
  // One row: every kernel but qkv starts early (pdl.cuh), released by its producer (at entry;
  // attention once its K/V reads are done); each waits on the producer before reading its
  // output, and copies its weights (attention: the older K and V rows) before that. gpu_bench,
  // Llama-3.1-8B step: 4.67 -> 4.44 ms. qkv early after down was 7-50 us slower, whether down
  // released it at entry or 8, 12 or 16 16ths through its weights; only the first layer's qkv,
  // after the embedding, is early. Not for more rows: rope's rows x heads blocks
  // would sit through a prefill GEMM.
  // (Not on a rank: its exchanges sit between the kernels.)
  const bool early = n == 1 && exchange_ == nullptr;
  // resid (+ delta) -> RMSNorm into `out` (rows of the residual `resid`), with either weights.
  // delta_parts > 1: delta is a matmul's K parts, unsummed (in parts_), which the norm adds.
  auto add_norm = [&](float* resid, const float* delta, const DeviceBuffer& norm_w, bf16* out,
                      int rows, int delta_parts = 1) {
    return norms_f32_ ? cuda::add_rms_norm(resid, delta, norm_w.get<float>(), out, rows, d, eps, s,
                                           delta_parts)
                      : cuda::add_rms_norm(resid, delta, norm_w.get<bf16>(), out, rows, d, eps, s,
                                           delta_parts);
  };
  // A dense matmul of the step's n rows: y = in . w^T (cols x k), on cuBLASLt (LtGemm), or on
  // wgmma_matmul where TF_CUDA_PREFILL_GEMM=wgmma takes it (its parts are always summed).
  const bool wgmma_rows = wgmma_gemm_ && n >= kWgmmaMinRows;
  auto dense = [&](const bf16* in, const DeviceBuffer& w, float* y, int cols, int k,
                   int* parts_left = nullptr) {
    if (wgmma_rows && cuda::wgmma_matmul_fits(n, cols, k)) {
      if (parts_left != nullptr) *parts_left = 1;
      return cuda::wgmma_matmul(in, w.get<bf16>(), y, n, cols, k, s);
    }
    return gemm_.matmul(in, w.get<bf16>(), y, n, cols, k, s, parts, parts_left);
  };
  // parts_left: as LtGemm::matmul's (y's parts may be left unsummed in parts_ for the reader).
  auto norm_then_matmul = [&](const float* delta, const DeviceBuffer& norm_w, const DeviceBuffer& w,
                              float* y, int cols, bool early_mm, int delta_parts = 1,
                              int* parts_left = nullptr) -> Status {
    if (fuse_norm(cols)) {
      TF_CUDA_TRY(cuda::norm_matmul(x, delta, norm_w.get<bf16>(), eps, x_other, w.get<bf16>(), y,
                                    cols, d, s, early_mm));
      std::swap(x, x_other);
      return {};
    }
    TF_CUDA_TRY(add_norm(x, delta, norm_w, h, n, delta_parts));
    TF_CUDA_TRY(dense(h, w, y, cols, d, parts_left));
    return {};
  };
  // A sandwich norm (Gemma) of a block's output before it joins the residual: the output, or its
  // norm in normed_.
  auto out_normed = [&](float* y, const DeviceBuffer& norm_w) -> Result<const float*> {
    if (norm_w.bytes() == 0) return static_cast<const float*>(y);
    TF_CUDA_TRY(cuda::rms_norm_f32(y, norm_w.get<float>(), normed_.get<float>(), n, d, eps, s));
    return static_cast<const float*>(normed_.get<float>());
  };
  const float* mlp_out = nullptr;  // the previous layer's MLP output, joining the residual next
  int mlp_parts = 1;               // mlp_out's unsummed K parts (its norm adds them)
  // The o and down projections leave their parts for the norm after them to add (one launch
  // fewer each), unless a sandwich norm reads the projection first.
  // Not on a rank, whose projections are summed with the other ranks' first.
  auto unsummed = [&](const DeviceBuffer& out_norm, int* count) {
    return parts != nullptr && out_norm.bytes() == 0 && exchange_ == nullptr ? count : nullptr;
  };
  for (int l = 0; l < cfg_.num_layers; ++l) {
    const DeviceLayer& L = layers_[l];
    // The previous layer's MLP output joins the residual here, with this layer's norm. qkv's
    // parts, where a batched matmul leaves them, are added by qkv_rope_kv_write.
    int qkv_parts = 1;
    TF_RETURN_IF_ERROR(norm_then_matmul(mlp_out, L.attn_norm, L.wqkv, qkv_f32_.get<float>(),
                                        qkv_dim, early && l == 0, mlp_parts,
                                        parts != nullptr ? &qkv_parts : nullptr));
    timer_.mark("norm_qkv", s);
    bf16* kc = k_cache_.get<bf16>() + kv_layer_elems_ * l;
    bf16* vc = v_cache_.get<bf16>() + kv_layer_elems_ * l;
    qt.bias = L.qkv_bias.get<float>();
    qt.q_norm = L.q_norm.get<float>();
    qt.k_norm = L.k_norm.get<float>();
    qt.k_cache = kc;
    qt.v_cache = vc;
    const bool local_rope = spec_.local_rope[l] && spec_.local_theta > 0;
    qt.cos = (local_rope ? local_cos_ : cos_).get<float>();
    qt.sin = (local_rope ? local_sin_ : sin_).get<float>();
    qt.qkv_parts = qkv_parts;
    TF_CUDA_TRY(cuda::qkv_rope_kv_write(qkv_parts > 1 ? parts : qkv_f32_.get<float>(), qp, qt, n, s,
                                        early));
    timer_.mark("qkv_rope_kv", s);
    cuda::AttentionParams ap{cfg_.num_heads, cfg_.num_kv_heads, hd, bs, width, scale};
    ap.window = spec_.window[l];
    ap.softcap = spec_.attn_softcap;
    cuda::AttentionBatch ab;
    ab.split_rows = plan.all_rows_split ? nullptr : in_.split_rows;
    ab.n_split_rows = plan.n_split_rows;
    if (plan.n_split_groups > 0) {
      ab.split_groups = in_.split_groups;
      ab.n_split_groups = plan.n_split_groups;
      ab.group_lines = plan.group_lines;
    }
    ab.max_splits = plan.fixed_splits > 0 ? plan.fixed_splits : splits_for(ap.window);
    ab.scratch = attn_scratch_.get<float>();
    ab.counters = attn_counters_.get<int32_t>();
    ab.tiles = in_.tiles;
    ab.n_tiles = plan.n_tiles;
    ab.tile_kernel = prefill_kernel_;
    ab.out = att_.get<bf16>();
    ab.early = early;
    TF_CUDA_TRY(
        cuda::paged_attention(q_.get<bf16>(), kc, vc, in_.tables, in_.row_seq, in_.pos, ap, ab, s));
    timer_.mark("attention", s);
    int o_parts = 1;
    if (row_o) {
      TF_CUDA_TRY(cuda::matmul_row(att_.get<bf16>(), L.wo.get<bf16>(), o_.get<float>(), d, q_dim, s,
                                   early));
    } else {
      TF_CUDA_TRY(dense(att_.get<bf16>(), L.wo, o_.get<float>(), d, q_dim,
                        unsummed(L.attn_out_norm, &o_parts)));
    }
    TF_RETURN_IF_ERROR(all_reduce(o_.get<float>()));
    timer_.mark("o_proj", s);
    TF_ASSIGN_OR_RETURN(const float* attn_out, out_normed(o_.get<float>(), L.attn_out_norm));
    if (o_parts > 1) attn_out = parts;
    if (spec_.moe[l]) {
      TF_CUDA_TRY(add_norm(x, attn_out, L.ffn_norm, h, n, o_parts));
      TF_RETURN_IF_ERROR(moe_.run(l, n, h, down, gemm_, stream_, !capturing_));
      TF_RETURN_IF_ERROR(all_reduce(down));
      timer_.mark("moe", s);
    } else if (fuse_swiglu) {
      TF_CUDA_TRY(cuda::norm_matmul_swiglu(x, attn_out, L.ffn_norm.get<bf16>(), eps, x_other,
                                           L.w_gate_up.get<bf16>(), act_.get<bf16>(), f, d, s,
                                           early));
      std::swap(x, x_other);
    } else if (gate_up_bf16) {
      TF_CUDA_TRY(add_norm(x, attn_out, L.ffn_norm, h, n, o_parts));
      if (wgmma_rows && cuda::wgmma_matmul_glu_fits(n, 2 * f, d)) {  // the GLU as its store
        TF_CUDA_TRY(cuda::wgmma_matmul_glu(h, L.w_gate_up.get<bf16>(), act_.get<bf16>(), n, 2 * f,
                                           d, glu_act(spec_.act), s));
      } else {
        // One part: cuBLASLt stores the projection as bf16, the rounding the GLU makes first.
        TF_CUDA_TRY(gemm_.matmul(h, L.w_gate_up.get<bf16>(), gu_.get<bf16>(), n, 2 * f, d, s));
        TF_CUDA_TRY(
            cuda::glu_interleaved(gu_.get<bf16>(), act_.get<bf16>(), n, f, s, glu_act(spec_.act)));
      }
    } else {
      TF_RETURN_IF_ERROR(norm_then_matmul(attn_out, L.ffn_norm, L.w_gate_up, gu_.get<float>(),
                                          2 * f, early, o_parts));
      TF_CUDA_TRY(
          cuda::glu_interleaved(gu_.get<float>(), act_.get<bf16>(), n, f, s, glu_act(spec_.act)));
    }
    int down_parts = 1;
    if (!spec_.moe[l]) {
      timer_.mark("norm_gate_up_swiglu", s);
      if (row_down) {
        TF_CUDA_TRY(cuda::matmul_row(act_.get<bf16>(), L.w_down.get<bf16>(), down, d, f, s, early));
      } else {
        TF_CUDA_TRY(
            dense(act_.get<bf16>(), L.w_down, down, d, f, unsummed(L.ffn_out_norm, &down_parts)));
      }
      TF_RETURN_IF_ERROR(all_reduce(down));
      timer_.mark("down", s);
    }
    TF_ASSIGN_OR_RETURN(mlp_out, out_normed(down, L.ffn_out_norm));
    if (down_parts > 1) mlp_out = parts;
    mlp_parts = down_parts;
  }
  const bf16* out_w = tied_ ? embed_.get<bf16>() : output_.get<bf16>();
  // A rank's logits are its vocabulary's columns, gathered with the other ranks' below.
  float* lm_out = exchange_ != nullptr ? rank_logits_.get<float>() : logits_.get<float>();
  if (n_out == 1 && fuse_norm(vocab_rows_)) {
    // One row: the last MLP output joins the residual inside the lm_head matmul, with the final
    // norm (the same bits as the gather and norm below: the row's values are the same floats).
    TF_CUDA_TRY(cuda::norm_matmul(x, mlp_out, out_norm_.get<bf16>(), eps, x_other, out_w, lm_out,
                                  vocab_rows_, d, s, early));
    timer_.mark("final_norm_lm_head", s);
  } else if (n_out > 0) {
    // The last MLP output joins the residual with the final norm into h. Where every row wants
    // its logits (out_rows is then 0 .. n - 1) h is projected as it is; otherwise the rows that
    // do are gathered and normalized again (the same bits: the same floats, the same norm).
    TF_CUDA_TRY(add_norm(x, mlp_out, out_norm_, h, n, mlp_parts));
    const bf16* normed = h;
    if (n_out < n) {
      TF_CUDA_TRY(cuda::gather_rows(x, in_.out_rows, xg_.get<float>(), n_out, d, s));
      TF_CUDA_TRY(add_norm(xg_.get<float>(), nullptr, out_norm_, hg_.get<bf16>(), n_out));
      normed = hg_.get<bf16>();
    }
    timer_.mark("final_norm", s);
    TF_CUDA_TRY(gemm_.matmul(normed, out_w, lm_out, n_out, vocab_rows_, d, s));
    timer_.mark("lm_head", s);
  }
  if (n_out > 0 && exchange_ != nullptr) {
    TF_RETURN_IF_ERROR(exchange_->all_gather(rank_, lm_out, static_cast<size_t>(n_out),
                                             static_cast<size_t>(vocab_rows_), logits_.get<float>(),
                                             s));
  }
  if (n_out > 0 && spec_.final_softcap > 0) {
    TF_CUDA_TRY(cuda::softcap(logits_.get<float>(), static_cast<size_t>(n_out) * vocab,
                              spec_.final_softcap, s));
  }
  return {};
}

}  // namespace

bool cuda_device_present() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

Result<std::unique_ptr<Model>> make_cuda_decoder(std::unique_ptr<DecoderModel> cpu) {
  auto m = std::make_unique<CudaDecoder>(std::move(cpu), nullptr, nullptr);
  TF_RETURN_IF_ERROR(m->check());
  TF_RETURN_IF_ERROR(m->upload_all());
  return std::unique_ptr<Model>(std::move(m));
}

Result<std::unique_ptr<Model>> make_cuda_rank_decoder(std::shared_ptr<DecoderModel> cpu,
                                                      std::shared_ptr<const RankWeights> part,
                                                      RankExchange& exchange) {
  auto m = std::make_unique<CudaDecoder>(std::move(cpu), std::move(part), &exchange);
  TF_RETURN_IF_ERROR(m->check());
  TF_RETURN_IF_ERROR(m->upload_all());
  m->drop_host_part();
  return std::unique_ptr<Model>(std::move(m));
}

}  // namespace tf::model
