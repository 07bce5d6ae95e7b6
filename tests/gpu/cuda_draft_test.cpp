// Drafting on the CUDA decoder (run on the H200; CI only compiles it): drafted replies equal
// "draft": false token for token and logprob for logprob, at 1 and 8 streams, with every draft
// right and every draft wrong: greedy rows, rows drawn on the device (a draw per drafted
// position) and grammar rows, greedy and drawn, masked on the device (a mask per drafted
// position); the verify steps replayed from CUDA graphs equal the same steps run eagerly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "model/model.h"
#include "support/byte_vocabulary.h"
#include "support/engine_reply.h"
#include "support/model_fixtures.h"
#include "support/replay_proposer.h"

namespace tf {
namespace {

using test::Reply;
using test::ReplayProposer;

constexpr int32_t kEos = 2;

std::shared_ptr<model::Model> load(const char* name) {
  auto ckpt = checkpoint::Checkpoint::open((test::fixtures_dir() / name).string());
  if (!ckpt) return nullptr;
  auto m = model::load_model(*ckpt, {2, model::Backend::kCuda});
  return m ? std::shared_ptr<model::Model>(std::move(*m)) : nullptr;
}

// Eight requests: greedy ones (half with logprobs), two drawn on the device and three under a
// grammar (greedy, greedy with logprobs: drawn on the host, and drawn on the device).
std::vector<engine::Request> requests(int vocab) {
  auto g = grammar::compile_grammar({grammar::GrammarKind::kRegex, "[a-z]{3,12}(, [a-z]{2,8}){1,3}",
                                     {}},
                                    test::byte_vocabulary(vocab, kEos));
  EXPECT_TRUE(g.ok()) << g.error().message;
  std::vector<engine::Request> reqs;
  for (int i = 0; i < 8; ++i) {
    engine::Request r;
    r.id = 200 + i;
    for (int t = 0; t < 6 + 5 * i; ++t) r.prompt.push_back(3 + (i * 37 + t * 11) % (vocab - 3));
    r.max_tokens = 40;
    r.logprobs = i % 2 == 0 ? 0 : -1;
    r.seed = 9 + i;
    if (i == 5) r.sampling.temperature = 1.0f;
    if (i == 3) {
      r.sampling.temperature = 0.8f;
      r.sampling.top_p = 0.9f;
      r.sampling.top_k = 40;
    }
    if (i == 7) r.sampling.temperature = 0.7f;
    if ((i == 1 || i == 6 || i == 7) && g.ok()) r.output.grammar = *g;
    reqs.push_back(r);
  }
  return reqs;
}

engine::EngineOptions options(std::shared_ptr<engine::draft::Proposer> proposer, int depth) {
  engine::EngineOptions o;
  o.eog_ids = {kEos};
  o.kv_budget_bytes = int64_t{64} << 20;
  o.draft.proposer = std::move(proposer);
  o.draft.fixed_depth = depth;
  o.draft.cost = engine::draft::VerifyCost{};
  return o;
}

// Each request's reply: one at a time (`streams` 1) or all submitted together.
std::vector<Reply> run(const std::shared_ptr<model::Model>& m, std::vector<engine::Request> reqs,
                       engine::EngineOptions o, int streams, engine::EngineStats* stats = nullptr) {
  engine::Engine e(m, std::move(o));
  std::vector<Reply> out;
  std::vector<std::shared_ptr<engine::Channel>> chans;
  for (auto& r : reqs) {
    auto ch = e.submit(r);
    EXPECT_TRUE(ch.ok());
    if (streams == 1) {
      out.push_back(test::collect(**ch));
    } else {
      chans.push_back(*ch);
    }
  }
  for (auto& ch : chans) out.push_back(test::collect(*ch));
  if (stats) *stats = e.stats();
  return out;
}

std::vector<engine::Request> serial(std::vector<engine::Request> reqs) {
  for (auto& r : reqs) r.draft = false;
  return reqs;
}

class CudaDraft : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaDraft, DraftedRepliesEqualSerialOnes) {
  auto m = load(GetParam());
  if (!m) GTEST_SKIP() << "no CUDA device or fixture";
  const int vocab = m->config().vocab_size;
  const auto reqs = requests(vocab);
  const std::vector<Reply> want = run(m, serial(reqs), options(nullptr, 4), 8);
  for (const Reply& r : want) ASSERT_TRUE(r.error.empty()) << r.error;
  auto right = std::make_shared<ReplayProposer>(0, vocab);
  auto wrong = std::make_shared<ReplayProposer>(1, vocab);
  for (size_t i = 0; i < reqs.size(); ++i) {
    right->set(reqs[i].id, want[i].ids);
    wrong->set(reqs[i].id, want[i].ids);
  }
  for (int streams : {1, 8}) {
    for (int depth : {1, 4, 8}) {
      for (const auto& p : {right, wrong}) {
        SCOPED_TRACE(::testing::Message() << streams << " streams, depth " << depth
                                          << (p == right ? ", right drafts" : ", wrong drafts"));
        engine::EngineStats st;
        const std::vector<Reply> got = run(m, reqs, options(p, depth), streams, &st);
        for (size_t i = 0; i < reqs.size(); ++i) {
          EXPECT_EQ(got[i].ids, want[i].ids) << "request " << i;
          EXPECT_EQ(got[i].logprobs, want[i].logprobs) << "request " << i;
          EXPECT_EQ(got[i].reason, want[i].reason) << "request " << i;
        }
        EXPECT_GT(st.draft_tokens, 0);
        if (p == right) {
          EXPECT_EQ(st.accepted_tokens, st.draft_tokens);
          // The device-drawn rows and the grammar rows drafted and kept their drafts.
          for (int i : {1, 3, 5, 6, 7}) {
            EXPECT_GT(got[i].usage.accepted_prediction_tokens, 0) << "request " << i;
          }
        } else {
          EXPECT_EQ(st.accepted_tokens, 0);
        }
      }
    }
  }
}

// The verify steps above replay graphs; with graphs off they run eagerly, and the replies (the
// verify steps' argmaxes and logprobs) are the same.
TEST_P(CudaDraft, VerifyGraphsEqualEagerVerifySteps) {
  auto graphs = load(GetParam());
  if (!graphs) GTEST_SKIP() << "no CUDA device or fixture";
  setenv("TF_CUDA_GRAPHS", "0", 1);
  auto eager = load(GetParam());
  unsetenv("TF_CUDA_GRAPHS");
  ASSERT_TRUE(eager);
  const int vocab = graphs->config().vocab_size;
  const auto reqs = requests(vocab);
  const std::vector<Reply> want = run(eager, serial(reqs), options(nullptr, 4), 8);
  auto right = std::make_shared<ReplayProposer>(0, vocab);
  for (size_t i = 0; i < reqs.size(); ++i) right->set(reqs[i].id, want[i].ids);
  for (int streams : {1, 8}) {
    const auto a = run(graphs, reqs, options(right, 6), streams);
    const auto b = run(eager, reqs, options(right, 6), streams);
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(a[i].ids, want[i].ids) << streams << " streams, request " << i;
      EXPECT_EQ(a[i].ids, b[i].ids) << streams << " streams, request " << i;
      EXPECT_EQ(a[i].logprobs, b[i].logprobs) << streams << " streams, request " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaDraft, ::testing::Values("llama", "qwen3", "gemma3"));

}  // namespace
}  // namespace tf
