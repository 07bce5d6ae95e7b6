// Grammar masks on the CUDA decoder (run on the H200; CI only compiles it): a masked row's argmax
// is the argmax of its logits over the allowed ids, its draw is always an allowed id and the same
// alone as among other rows, in eager (prefill) and graph (decode) steps; and the engine on CUDA
// keeps grammar-masked replies batch-invariant and the same on overlapped steps as on plain ones,
// with the device mask giving the host mask's greedy tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <regex>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "model/model.h"
#include "support/byte_vocabulary.h"
#include "support/model_fixtures.h"

namespace tf {
namespace {

constexpr int kRows = 6;

std::unique_ptr<model::Model> load(const char* name) {
  auto ckpt = checkpoint::Checkpoint::open((test::fixtures_dir() / name).string());
  if (!ckpt) return nullptr;
  auto m = model::load_model(*ckpt, {2, model::Backend::kCuda});
  return m ? std::move(*m) : nullptr;
}

bool allowed(const std::vector<uint32_t>& mask, int id) { return (mask[id / 32] >> (id % 32)) & 1; }

// Row r allows ids with (id * 7 + r) % (r + 3) == 0; row 1 a single id; row 4 no mask at all.
std::vector<std::vector<uint32_t>> make_masks(int vocab) {
  std::vector<std::vector<uint32_t>> masks(kRows, std::vector<uint32_t>((vocab + 31) / 32, 0));
  for (int r = 0; r < kRows; ++r) {
    for (int id = 0; id < vocab; ++id) {
      const bool on = r == 1 ? id == vocab / 3 : (id * 7 + r) % (r + 3) == 0;
      if (on) masks[r][id / 32] |= 1u << (id % 32);
    }
  }
  masks[4].clear();
  return masks;
}

int masked_argmax(const float* row, int vocab, const std::vector<uint32_t>& mask) {
  int best = -1;
  for (int id = 0; id < vocab; ++id) {
    if (!mask.empty() && !allowed(mask, id)) continue;
    if (best < 0 || row[id] > row[best]) best = id;
  }
  return best;
}

// One step of `batch` (prefill chunks, or decode rows after them) unmasked with logits, then
// masked with argmaxes and draws; checks every row.
void check_step(model::Model& m, std::vector<model::SeqChunk> batch, model::KvCache& kv,
                const std::vector<std::vector<uint32_t>>& masks, const char* what) {
  const int vocab = m.config().vocab_size;
  std::vector<float> logits(kRows * static_cast<size_t>(vocab));
  std::vector<int32_t> plain(kRows), masked(kRows), drawn(kRows);
  ASSERT_TRUE(m.forward_argmax(batch, kv, logits.data(), plain.data(), true).ok());
  for (int r = 0; r < kRows; ++r) batch[r].mask = masks[r];
  ASSERT_TRUE(m.forward_argmax(batch, kv, logits.data(), masked.data(), false).ok());
  for (int r = 0; r < kRows; ++r) {
    ASSERT_GE(masked_argmax(&logits[r * static_cast<size_t>(vocab)], vocab, masks[r]), 0);
    EXPECT_EQ(masked[r], masked_argmax(&logits[r * static_cast<size_t>(vocab)], vocab, masks[r]))
        << what << " row " << r;
    batch[r].draw = model::DeviceDraw{1.0f, 0, 0.9f, 0.0f, 0.37 + 0.1 * r};
  }
  ASSERT_TRUE(m.forward_argmax(batch, kv, logits.data(), drawn.data(), false).ok());
  for (int r = 0; r < kRows; ++r) {
    if (!masks[r].empty()) {
      EXPECT_TRUE(allowed(masks[r], drawn[r])) << what << " row " << r;
    }
    int32_t alone = -1;
    ASSERT_TRUE(
        m.forward_argmax(std::span(batch).subspan(r, 1), kv, logits.data(), &alone, false).ok());
    EXPECT_EQ(alone, drawn[r]) << what << " row " << r << ": batched draw != alone";
  }
  EXPECT_NE(plain, masked) << what << ": the masks changed nothing";
}

TEST(CudaMask, ArgmaxAndDrawsFollowTheMask) {
  auto m = load("llama");
  if (!m) GTEST_SKIP() << "no CUDA device or fixture";
  ASSERT_TRUE(m->masks_on_device());
  const int vocab = m->config().vocab_size, bs = model::KvCache::kDefaultBlockSize;
  const auto masks = make_masks(vocab);
  std::vector<std::vector<int32_t>> prompts(kRows), tables(kRows);
  model::KvCache kv(m->config(), kRows * 2);
  std::vector<model::SeqChunk> prefill, decode;
  const int32_t next = 7;
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < 5 + 3 * r; ++t) prompts[r].push_back((r * 131 + t * 17) % vocab);
    tables[r] = {2 * r, 2 * r + 1};
    const auto len = static_cast<int64_t>(prompts[r].size());
    ASSERT_LT(len + 1, 2 * bs);
    prefill.push_back({prompts[r], 0, tables[r], 1});
    decode.push_back({std::span<const int32_t>(&next, 1), len, tables[r], 1});
  }
  check_step(*m, prefill, kv, masks, "prefill");
  check_step(*m, decode, kv, masks, "decode");  // graph replays
}

std::vector<int32_t> run(engine::Engine& e, std::vector<engine::Request> reqs, bool together) {
  std::vector<int32_t> all;
  std::vector<std::shared_ptr<engine::Channel>> chans;
  auto drain = [&](engine::Channel& ch) {
    while (auto ev = ch.pop()) {
      if (auto* t = std::get_if<engine::Tokens>(&*ev))
        all.insert(all.end(), t->ids.begin(), t->ids.end());
      if (auto* f = std::get_if<engine::Finished>(&*ev)) {
        EXPECT_NE(f->reason, engine::FinishReason::kError) << (f->error ? f->error->message : "");
        all.push_back(-1);
      }
    }
  };
  for (auto& r : reqs) {
    auto ch = e.submit(r);
    EXPECT_TRUE(ch.ok());
    if (!together)
      drain(**ch);
    else
      chans.push_back(*ch);
  }
  for (auto& ch : chans) drain(*ch);
  return all;
}

TEST(CudaMask, EngineRepliesFollowTheGrammarBatchedAsSolo) {
  auto dev = load("llama");
  if (!dev) GTEST_SKIP() << "no CUDA device or fixture";
  const int vocab = dev->config().vocab_size;
  constexpr int32_t kEos = 2;
  auto g =
      grammar::compile_grammar({grammar::GrammarKind::kRegex, "[a-z]{3,12}(, [a-z]{2,8}){1,3}", {}},
                               test::byte_vocabulary(vocab, kEos));
  ASSERT_TRUE(g.ok()) << g.error().message;
  std::vector<engine::Request> reqs;
  for (int i = 0; i < 8; ++i) {
    engine::Request r;
    r.id = 100 + i;
    for (int t = 0; t < 4 + i; ++t) r.prompt.push_back(3 + (i * 37 + t * 11) % (vocab - 3));
    r.sampling.temperature = i % 2 ? 1.0f : 0.0f;
    r.seed = 5 + i;
    r.max_tokens = 48;
    r.output.grammar = *g;
    reqs.push_back(r);
  }
  engine::EngineOptions o;
  o.eog_ids = {kEos};
  o.kv_budget_bytes = int64_t{64} << 20;
  std::shared_ptr<model::Model> shared(std::move(dev));
  std::vector<engine::Request> greedy;
  for (const auto& r : reqs) {
    if (r.sampling.temperature == 0.0f) greedy.push_back(r);
  }
  // Each engine is gone before the next one steps the model (which serves one at a time): an
  // overlapped run may still collect its queued step after its last reply ended.
  std::vector<int32_t> batched, greedy_device_masks;
  {
    engine::Engine e(shared, o);
    const auto solo = run(e, reqs, false);
    batched = run(e, reqs, true);
    EXPECT_EQ(solo, batched);
    // Masked rows keep the overlapped steps (each step's masks follow once the token before is
    // read): the same replies as plain steps, greedy and sampled.
    EXPECT_GT(e.stats().overlapped_steps, 40);
    greedy_device_masks = run(e, greedy, true);
  }
  {
    engine::EngineOptions plain_steps = o;
    plain_steps.overlap = false;
    engine::Engine ep(shared, plain_steps);
    EXPECT_EQ(run(ep, reqs, true), batched);
    EXPECT_EQ(ep.stats().overlapped_steps, 0);
  }
  // Every reply matches the pattern (bytes of ids < 256 are the ids themselves).
  std::string text;
  for (int32_t id : batched) {
    if (id == -1) {
      EXPECT_TRUE(std::regex_match(text, std::regex("[a-z]{3,12}(, [a-z]{2,8}){1,3}"))) << text;
      text.clear();
    } else if (id != kEos) {
      text += test::byte_token(id);
    }
  }
  // The host mask (a second model instance that leaves masks to the engine) gives the same
  // greedy replies.
  setenv("TF_CUDA_DEVICE_MASKS", "0", 1);
  std::shared_ptr<model::Model> host(load("llama"));
  unsetenv("TF_CUDA_DEVICE_MASKS");
  ASSERT_FALSE(host->masks_on_device());
  engine::Engine eh(host, o);
  EXPECT_EQ(greedy_device_masks, run(eh, greedy, true));
}

}  // namespace
}  // namespace tf
