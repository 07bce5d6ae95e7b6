// The Model interface: forward a chunk of one sequence's tokens, write their K/V into the
// sequence's cache, and return logits. Families implement it; load_model picks the family.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/thread_pool.h"
#include "checkpoint/checkpoint.h"
#include "model/kv_cache.h"
#include "model/kv_transfer.h"

namespace tf::model {

// One sequence's part of a forward step.
// A sampled draw a model makes itself (Model::draws_on_device): temperature > 0; u is the draw's
// uniform in [0, 1), the engine's keyed_uniform of the seed and the token's position.
struct DeviceDraw {
  float temperature = 1.0f;
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  double u = 0.0;
};

struct SeqChunk {
  std::span<const int32_t> tokens;
  int64_t pos0 = 0;
  std::span<const int32_t> block_table;  // must cover positions < pos0 + tokens.size()
  int64_t n_logits = 1;                  // logits for the last n_logits tokens (0..tokens.size())
  // With n_logits == 1 on a model that draws on the device: forward_argmax's value for this
  // chunk is that draw's token instead of the argmax.
  std::optional<DeviceDraw> draw = std::nullopt;
  // With n_logits > 1 on a model that draws on the device: a draw for each logits row, in order
  // (a verify step's token and drafts, each keyed by its own position), each row's value that
  // draw's token. Empty: the argmaxes.
  std::span<const DeviceDraw> row_draws = {};
  // With n_logits == 1 on a model that masks on the device: the allowed tokens (bit id % 32 of
  // word id / 32); the others weigh 0 in the draw and never win the argmax. Empty: all allowed.
  std::span<const uint32_t> mask = {};
  // With n_logits > 1 on a model that masks on the device: a mask for each logits row, in order
  // (a verify step's token and drafts, each under the rules advanced through the drafts before
  // it), as `mask` is for one row; an empty mask leaves its row unmasked. Empty: none masked.
  std::span<const std::span<const uint32_t>> row_masks = {};
};

// Where forward steps run. kAuto: the GPU when this build has CUDA, a device is present and the
// model's features are covered there; otherwise the CPU (saying why in the log).
enum class Backend { kCpu, kCuda, kAuto };

struct LoadOptions {
  int threads = 0;  // 0: all hardware threads
  Backend backend = Backend::kCpu;
};

// The names command lines use for them.
inline const std::map<std::string, Backend>& backend_names() {
  static const std::map<std::string, Backend> names = {
      {"cpu", Backend::kCpu}, {"cuda", Backend::kCuda}, {"auto", Backend::kAuto}};
  return names;
}

// The largest steps a model will be given (Model::reserve_steps).
struct StepLimits {
  int64_t rows = 0;        // tokens a step (prefill budget + one decode row a stream)
  int64_t logit_rows = 0;  // rows of logits a step
  int64_t split_rows = 0;  // short chunks' rows a step (decode rows and their drafts)
  int64_t context = 0;     // positions a sequence may reach
};

// Not reentrant: one caller steps a model at a time (the engine thread); its thread pool and
// device buffers serve one batch at a time.
class Model {
 public:
  virtual ~Model() = default;
  virtual const checkpoint::ModelConfig& config() const = 0;

  // Runs one step over several sequences' chunks: each chunk's tokens sit at positions
  // pos0 .. pos0+n-1 of its sequence (whose earlier positions are already in `kv`), their K/V are
  // stored through the chunk's block table, and the logits of each chunk's last `n_logits` tokens
  // are written to `logits`, chunk after chunk ([sum of n_logits, vocab]). A token's logits do not
  // depend on the other chunks in the step nor on how its sequence was split into steps.
  virtual Status forward(std::span<const SeqChunk> batch, KvCache& kv, float* logits) = 0;

  // forward() that also writes each logits row's argmax (the lowest index of its largest value)
  // to `argmax`, and may leave `logits` unwritten when `logits_needed` is false: greedy decoding
  // then needs no logits at all. The default runs forward() and scans the rows on the host; the
  // CUDA decoder scans them on the GPU and skips the copy back.
  virtual Status forward_argmax(std::span<const SeqChunk> batch, KvCache& kv, float* logits,
                                int32_t* argmax, bool logits_needed);

  // Overlapped decode: the engine queues the next step before it reads the current one's tokens,
  // so its own work and the launch run while the device computes. launch_decode() queues a step
  // of decode rows (one token each, n_logits 1) that yields argmaxes only; with `follow`, row i's
  // token is the argmax of row i of the step queued just before it (which must have as many rows),
  // and batch[i].tokens is not read. collect() waits for the oldest queued step and writes its
  // argmaxes; at most two steps are queued at a time. After an error, discard_queued() drops what
  // is queued. The default runs each step inside launch_decode(), so it overlaps nothing;
  // overlaps_steps() says whether a model gains from the pattern. The queue is the model's: as
  // with every step, one caller (one engine) at a time.
  //
  // A following step under grammar masks (masks_on_device models): row i's mask depends on the
  // token the step before leaves, which the host has not read when the step is queued. With
  // `defer_selection`, launch_decode queues the step's forward only, and select_queued(masks)
  // then queues its argmaxes and draws under the rows' masks (one per row; empty: none), once the
  // host has read the step before and advanced the rows' grammars.
  virtual bool overlaps_steps() const { return false; }
  virtual Status launch_decode(std::span<const SeqChunk> batch, KvCache& kv, bool follow,
                               bool defer_selection = false);
  virtual Status select_queued(std::span<const std::span<const uint32_t>> masks);
  virtual Status collect(int32_t* argmax);
  virtual void discard_queued() {
    queued_.clear();
    deferred_.reset();
  }

  // One sequence whose KV occupies blocks 0.. of `kv` in order (tests, simple tools).
  Status forward(std::span<const int32_t> tokens, int64_t pos0, KvCache& kv, float* logits,
                 int64_t n_logits = 1);

  // Host memory for `floats` logits that forward() fills fastest (pinned memory on CUDA), valid
  // until the next call; nullptr: use any buffer.
  virtual float* logits_buffer(size_t /*floats*/) { return nullptr; }

  // Whether forward_argmax makes the chunks' DeviceDraws (their tokens in place of argmaxes);
  // false: they are ignored, and the engine draws from the logits on the host.
  virtual bool draws_on_device() const { return false; }
  // Whether forward_argmax applies the chunks' masks (SeqChunk::mask) to its argmaxes and draws;
  // false: they are ignored, and the engine draws masked rows from the logits on the host.
  virtual bool masks_on_device() const { return false; }
  // Whether the KV pool lives in host memory (the CPU backend), where the prompt cache's lower
  // tiers copy blocks from and to. Where it does not, the engine's KvCache holds no storage.
  virtual bool kv_in_host_memory() const { return true; }
  // Bytes of one K or V element in the pool (f32 on the host, bf16 on a GPU): what a pool's
  // memory budget buys (KvCache::block_bytes).
  virtual int kv_element_bytes() const { return 4; }
  // Allocates now the step buffers that steps within `limits` need, and returns the device memory
  // left for the KV pool beside them (free memory less a margin for what grows later: library
  // workspaces, graphs). -1 where the pool is in host memory, whose size the caller picks.
  virtual Result<int64_t> reserve_steps(const StepLimits& /*limits*/) { return int64_t{-1}; }
  // Block copies between `kv`'s pool (wherever this model keeps it) and host memory, for the
  // prompt cache's tiers below the pool; null where the model offers none.
  virtual std::unique_ptr<KvBlockTransfer> kv_transfer(KvCache& kv) {
    return make_host_kv_transfer(kv);
  }

  // The host threads the model computes with, free between steps (the engine draws its sampled
  // rows on them); nullptr: none.
  virtual ThreadPool* host_pool() { return nullptr; }

  // The arithmetic this model's outputs and KV follow where it differs between machines of one
  // backend (a CPU's instruction sets); empty where it does not. Cached KV is reused only under
  // the same name.
  virtual std::string numerics() const { return {}; }

  // The copy rate of the memory this model streams its weights and KV pool from: bytes read plus
  // bytes written a second, the best of five 256 MiB copies, measured when called (it allocates
  // and copies: for benchmarks' floors, where a step that reads B bytes takes at least B / this).
  virtual double copy_bandwidth();

  // Bytes of weights one decode step reads (for bandwidth floors in benchmarks).
  virtual size_t weight_bytes() const = 0;

  // Bytes of weights the last forward step actually read (a mixture of experts reads only the
  // routed experts); weight_bytes() where a model does not track it.
  virtual size_t bytes_read_last_step() const { return weight_bytes(); }

  // The caller stepping the model now (an engine's ModelRunner, from its first step until nothing
  // it queued is left): a second caller is refused (false) rather than let the two share the
  // thread pool and buffers, which would corrupt both. claim() by the holder is true again.
  bool claim(const void* user) {
    const void* holder = nullptr;
    return user_.compare_exchange_strong(holder, user) || holder == user;
  }
  void release(const void* user) { user_.compare_exchange_strong(user, nullptr); }
  // claim(), waiting up to `wait` for the holder to let go: engines that take turns on one model
  // get whole steps each, and one held longer than that (a chain of overlapped steps) is refused.
  bool claim_within(const void* user, std::chrono::milliseconds wait);

 private:
  std::atomic<const void*> user_{nullptr};
  std::deque<std::vector<int32_t>> queued_;  // the default launch_decode()'s results
  // The default's deferred step: run by select_queued() with its masks.
  struct Deferred {
    std::vector<SeqChunk> rows;
    std::vector<int32_t> tokens;
    KvCache* kv = nullptr;
  };
  std::optional<Deferred> deferred_;
};

// Where a step should write `floats` logits: the model's own buffer (Model::logits_buffer), else
// `fallback`, sized to them.
inline float* logits_out(Model& m, size_t floats, std::vector<float>& fallback) {
  if (float* own = m.logits_buffer(floats)) return own;
  fallback.resize(floats);
  return fallback.data();
}

// One pool block's bytes where the model keeps its pool, at its KV element size: what a pool's
// memory budget is divided by.
inline int64_t kv_block_bytes(const Model& m) {
  return KvCache::block_bytes(m.config(), KvCache::kDefaultBlockSize, m.kv_element_bytes());
}

// Refuses an architecture no family implements, naming it; reads nothing but the config.
Status check_supported(const checkpoint::ModelConfig& config);

// Builds the family's model over the checkpoint's (mapped) weights; a missing or misshapen tensor
// is refused by name before any compute.
Result<std::unique_ptr<Model>> load_model(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                          const LoadOptions& options);

}  // namespace tf::model
