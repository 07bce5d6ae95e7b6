// Drafting never changes a reply: on a real model, drafted replies equal "draft": false token for
// token (and logprob for logprob), greedy and sampled, with and without a grammar, at 1 and 8
// streams, with stop ids and max_tokens; with drafts that are always right, always wrong, or
// context copies. Rejected positions' KV never reaches the prefix cache.
#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>

#include "checkpoint/checkpoint.h"
#include "engine/draft/draft_model.h"
#include "engine/draft/proposer.h"
#include "engine/engine.h"
#include "engine/grammar_vocabulary.h"
#include "support/engine_reply.h"
#include "support/paths.h"
#include "support/replay_proposer.h"
#include "tokenizer/from_checkpoint.h"

namespace tf::engine {
namespace {

using test::collect;
using test::ReplayProposer;
using test::Reply;

constexpr int32_t kEos = 2;
constexpr int kVocab = 512;  // stories260K's

class DraftExactness : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = testing::shared_path("models/stories260K.gguf");
    if (!std::filesystem::exists(path)) return;
    auto ckpt = checkpoint::Checkpoint::open(path);
    ASSERT_TRUE(ckpt.ok()) << ckpt.error().message;
    auto tok = tokenizer::tokenizer_for(**ckpt);
    ASSERT_TRUE(tok.ok());
    tok_ = *tok;
    auto m = model::load_model(*ckpt, {2});
    ASSERT_TRUE(m.ok()) << m.error().message;
    model_ = std::shared_ptr<model::Model>(std::move(*m));
    grammar::GrammarSpec spec;
    spec.kind = grammar::GrammarKind::kJsonSchema;
    spec.text = R"({"type": "object", "properties": {"color": {"enum": ["red", "green"]},
      "tag": {"type": "string", "maxLength": 12}}, "required": ["color", "tag"],
      "additionalProperties": false})";
    auto g = grammar::compile_grammar(spec, grammar_vocabulary(*tok_));
    ASSERT_TRUE(g.ok()) << g.error().message;
    grammar_ = *g;
  }
  static void TearDownTestSuite() {
    model_.reset();
    tok_.reset();
    grammar_.reset();
  }
  void SetUp() override {
    if (!model_) GTEST_SKIP() << "missing ../shared/models/stories260K.gguf (see DATA.md)";
  }

  static EngineOptions options(std::shared_ptr<draft::Proposer> proposer = nullptr,
                               std::optional<int> depth = 4) {
    EngineOptions o;
    o.eog_ids = {kEos};
    o.kv_budget_bytes = int64_t{64} << 20;
    o.draft.proposer = std::move(proposer);
    o.draft.fixed_depth = depth;
    o.draft.cost = draft::VerifyCost{};
    return o;
  }

  // Stories repeat themselves: greedy replies of this model copy from their own context a lot.
  static Request make_request(RequestId id, float temperature, bool grammar, int max_tokens = 48) {
    Request r;
    r.id = id;
    r.prompt = tok_->encode("Once upon a time, there was a little girl. She liked to play. Once");
    r.prompt.push_back(3 + static_cast<int32_t>(id % 100));
    r.sampling.temperature = temperature;
    r.sampling.top_p = temperature > 0 ? 0.9f : 1.0f;
    r.seed = 1000 + id;
    r.max_tokens = max_tokens;
    r.logprobs = id % 2 == 0 ? 0 : -1;
    if (grammar) r.output.grammar = grammar_;
    return r;
  }

  static std::vector<Reply> run(const std::vector<Request>& reqs, EngineOptions o,
                                EngineStats* stats = nullptr) {
    Engine e(model_, std::move(o));
    std::vector<std::shared_ptr<Channel>> chans;
    for (const auto& r : reqs) {
      auto ch = e.submit(r);
      EXPECT_TRUE(ch.ok());
      chans.push_back(*ch);
    }
    std::vector<Reply> out;
    for (auto& ch : chans) out.push_back(collect(*ch));
    if (stats) *stats = e.stats();
    auto s = e.stats();
    EXPECT_EQ(s.free_blocks + s.cached_blocks, s.total_blocks);
    return out;
  }

  static std::vector<Request> serial(std::vector<Request> reqs) {
    for (auto& r : reqs) r.draft = false;
    return reqs;
  }

  // Drafted (under `o`) equals serial, token for token and logprob for logprob.
  static EngineStats expect_exact(const std::vector<Request>& reqs, EngineOptions o) {
    const std::vector<Reply> want = run(serial(reqs), options());
    EngineStats stats;
    const std::vector<Reply> got = run(reqs, std::move(o), &stats);
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(got[i].ids, want[i].ids) << "request " << reqs[i].id;
      EXPECT_EQ(got[i].logprobs, want[i].logprobs) << "request " << reqs[i].id;
      EXPECT_EQ(got[i].reason, want[i].reason) << "request " << reqs[i].id;
      EXPECT_EQ(got[i].usage.completion_tokens, want[i].usage.completion_tokens);
      EXPECT_EQ(want[i].usage.accepted_prediction_tokens, 0);
    }
    return stats;
  }

  static std::vector<Request> batch(int n, float temperature, bool grammar) {
    std::vector<Request> reqs;
    for (int i = 0; i < n; ++i) reqs.push_back(make_request(10 + i, temperature, grammar));
    return reqs;
  }

  static std::shared_ptr<model::Model> model_;
  static std::shared_ptr<tokenizer::Tokenizer> tok_;
  static std::shared_ptr<const grammar::CompiledGrammar> grammar_;
};
std::shared_ptr<model::Model> DraftExactness::model_;
std::shared_ptr<tokenizer::Tokenizer> DraftExactness::tok_;
std::shared_ptr<const grammar::CompiledGrammar> DraftExactness::grammar_;

TEST_F(DraftExactness, ContextCopiesGreedyAndSampledWithAndWithoutGrammar) {
  for (int n : {1, 8}) {
    for (float temperature : {0.0f, 0.8f}) {
      for (bool grammar : {false, true}) {
        SCOPED_TRACE(::testing::Message() << n << " streams, temperature " << temperature
                                          << (grammar ? ", grammar" : ""));
        const EngineStats s = expect_exact(batch(n, temperature, grammar), options());
        EXPECT_GT(s.drafts, 0);
        EXPECT_GT(s.draft_tokens, 0);
        if (!grammar && temperature == 0) {
          EXPECT_GT(s.accepted_tokens, 0);  // stories repeat themselves
        }
      }
    }
  }
}

TEST_F(DraftExactness, EveryDraftRightAndEveryDraftWrong) {
  for (float temperature : {0.0f, 0.8f}) {
    for (bool grammar : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "temperature " << temperature << (grammar ? ", grammar" : ""));
      const std::vector<Request> reqs = batch(8, temperature, grammar);
      const std::vector<Reply> want = run(serial(reqs), options());
      auto right = std::make_shared<ReplayProposer>(0, kVocab);
      auto wrong = std::make_shared<ReplayProposer>(1, kVocab);
      for (size_t i = 0; i < reqs.size(); ++i) {
        right->set(reqs[i].id, want[i].ids);
        wrong->set(reqs[i].id, want[i].ids);
      }
      EngineStats s;
      std::vector<Reply> got = run(reqs, options(right), &s);
      int64_t completion = 0, accepted = 0;
      for (size_t i = 0; i < reqs.size(); ++i) {
        EXPECT_EQ(got[i].ids, want[i].ids);
        EXPECT_EQ(got[i].logprobs, want[i].logprobs);
        completion += got[i].usage.completion_tokens;
        accepted += got[i].usage.accepted_prediction_tokens;
        EXPECT_EQ(got[i].usage.rejected_prediction_tokens, 0);
      }
      // Right drafts: every one kept, so about 5 tokens a step (4 drafts and the bonus).
      EXPECT_EQ(s.accepted_tokens, s.draft_tokens);
      EXPECT_EQ(accepted, s.accepted_tokens);
      EXPECT_GT(s.accepted_tokens, completion / 2);
      got = run(reqs, options(wrong), &s);
      for (size_t i = 0; i < reqs.size(); ++i) {
        EXPECT_EQ(got[i].ids, want[i].ids);
        EXPECT_EQ(got[i].logprobs, want[i].logprobs);
        EXPECT_EQ(got[i].usage.accepted_prediction_tokens, 0);
      }
      EXPECT_EQ(s.accepted_tokens, 0);
      if (!grammar) {
        EXPECT_GT(s.draft_tokens, 0);  // with a grammar, wrong ids may all be cut
      }
    }
  }
}

TEST_F(DraftExactness, StopIdsAndMaxTokensEndDraftedRepliesWhereSerialOnesEnd) {
  std::vector<Request> reqs = batch(8, 0.0f, false);
  const std::vector<Reply> free = run(serial(reqs), options());
  auto right = std::make_shared<ReplayProposer>(0, kVocab);
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].max_tokens = 3 + static_cast<int>(i) * 5;     // inside a draft's reach
    if (i % 2 == 1) reqs[i].stop_ids = {free[i].ids[4]};  // a stop id the drafts carry past
    right->set(reqs[i].id, free[i].ids);
  }
  expect_exact(reqs, options(right, 8));
}

TEST_F(DraftExactness, RejectedPositionsNeverReachThePrefixCache) {
  // A drafted reply whose drafts are all wrong writes KV for each rejected position; a request
  // that continues it then reuses the committed blocks, and must equal the same request computed
  // without any cache.
  Request a = make_request(1, 0.0f, false, 64);
  const Reply want_a = run({serial({a})[0]}, options())[0];
  auto wrong = std::make_shared<ReplayProposer>(3, kVocab);
  wrong->set(1, want_a.ids);
  Request b = make_request(2, 0.0f, false, 24);
  b.prompt = a.prompt;
  b.prompt.insert(b.prompt.end(), want_a.ids.begin(), want_a.ids.end() - 1);
  Engine e(model_, options(wrong, 8));
  auto ca = e.submit(a);
  ASSERT_TRUE(ca.ok());
  EXPECT_EQ(collect(**ca).ids, want_a.ids);
  auto cb = e.submit(b);
  ASSERT_TRUE(cb.ok());
  const Reply got_b = collect(**cb);
  EngineOptions fresh = options();
  fresh.prefix_cache = false;
  EXPECT_EQ(got_b.ids, run({serial({b})[0]}, fresh)[0].ids);
  EXPECT_GT(got_b.usage.cached_tokens, 16);  // it did reuse a's committed blocks
}

TEST_F(DraftExactness, AdaptiveDepthStopsDraftingWhereDraftsFail) {
  const std::vector<Request> reqs = batch(1, 0.0f, false);
  const std::vector<Reply> want = run(serial(reqs), options());
  auto wrong = std::make_shared<ReplayProposer>(1, kVocab);
  wrong->set(reqs[0].id, want[0].ids);
  EngineOptions o = options(wrong, std::nullopt);
  // Each draft costs a tenth of a step: wrong drafts soon stop being asked for.
  std::vector<double> secs;
  for (int k = 0; k <= 8; ++k) secs.push_back(1.0 + 0.1 * k);
  o.draft.cost = draft::VerifyCost({1}, 8, secs);
  EngineStats s;
  EXPECT_EQ(run(reqs, o, &s)[0].ids, want[0].ids);
  EXPECT_GT(s.drafts, 0);
  EXPECT_LT(s.drafts, static_cast<int64_t>(want[0].ids.size()) / 2);
}

// --draft-model: a second instance of the same model drafts its own greedy continuation, all the
// step's rows in one batch; greedy rows keep every draft (the draft model's logits are the served
// model's, by batch and chunk invariance), sampled and grammar rows some; every reply is serial's.
TEST_F(DraftExactness, DraftModelRepliesEqualSerialOnes) {
  auto ckpt = checkpoint::Checkpoint::open(testing::shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(ckpt.ok());
  auto m = model::load_model(*ckpt, {2});
  ASSERT_TRUE(m.ok());
  std::shared_ptr<model::Model> draft_model(std::move(*m));
  EXPECT_FALSE(draft::DraftModelProposer::create(draft_model, kVocab - 1, 64 << 20).ok());
  auto proposer = draft::DraftModelProposer::create(draft_model, kVocab, 64 << 20);
  ASSERT_TRUE(proposer.ok()) << proposer.error().message;
  for (float temperature : {0.0f, 0.8f}) {
    for (bool grammar : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "temperature " << temperature << (grammar ? ", grammar" : ""));
      const EngineStats s = expect_exact(batch(8, temperature, grammar), options(*proposer, 4));
      EXPECT_GT(s.accepted_tokens, 0);
      if (temperature == 0.0f && !grammar) {
        EXPECT_EQ(s.accepted_tokens, s.draft_tokens);
      }
    }
  }
  // One stream at a time too (its KV comes back to the draft pool as each request ends).
  for (const Request& r : batch(3, 0.0f, false)) expect_exact({r}, options(*proposer, 6));
}

// A draft pool that holds one sequence: the second to draft takes the first's blocks, and the first
// catches up again when it next drafts, proposing what it proposed before.
TEST_F(DraftExactness, AFullDraftPoolGivesTheLeastRecentRowsBlocks) {
  auto proposer =
      draft::DraftModelProposer::create(model_, kVocab, 4 * model::kv_block_bytes(*model_));
  ASSERT_TRUE(proposer.ok()) << proposer.error().message;
  draft::DraftModelProposer& p = **proposer;
  Sequence a, b;  // 40 tokens and 4 drafts: 3 blocks of 16 each
  a.req.id = 1;
  b.req.id = 2;
  for (int i = 0; i < 40; ++i) {
    a.tokens.push_back(1 + (7 * i) % 300);
    b.tokens.push_back(1 + (11 * i) % 300);
  }
  auto drafts_of = [&](Sequence& s) {
    const Sequence* rows[] = {&s};
    p.prepare(rows, 4);
    std::vector<int32_t> out;
    p.propose(s, 4, out);
    return out;
  };
  const std::vector<int32_t> first = drafts_of(a);
  EXPECT_EQ(first.size(), 4u);
  EXPECT_EQ(drafts_of(b).size(), 4u);  // a's blocks, a not being in this step
  EXPECT_EQ(drafts_of(a), first);      // caught up again from its first token
  // Both in one step: the second cannot take the first's blocks, so it does not draft.
  const Sequence* both[] = {&a, &b};
  p.prepare(both, 4);
  std::vector<int32_t> out_a, out_b;
  p.propose(a, 4, out_a);
  p.propose(b, 4, out_b);
  EXPECT_EQ(out_a, first);
  EXPECT_TRUE(out_b.empty());
  p.finished(a);
  p.finished(b);
}

TEST_F(DraftExactness, NoDraftServerAndDraftFalseRequestsNeverDraft) {
  const std::vector<Request> reqs = batch(2, 0.0f, false);
  EngineOptions off = options();
  off.draft.enabled = false;
  EngineStats s;
  run(reqs, off, &s);
  EXPECT_EQ(s.drafts, 0);
  run(serial(reqs), options(), &s);
  EXPECT_EQ(s.drafts, 0);
}

}  // namespace
}  // namespace tf::engine
