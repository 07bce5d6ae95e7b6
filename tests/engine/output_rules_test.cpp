// The engine under a request's OutputRules on a real model: grammar-masked draws follow the
// grammar and are the same batched as solo; a reasoning budget makes the engine close the block
// itself; the grammar starts after the block; the first token may open the block instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "engine/grammar_vocabulary.h"
#include "support/engine_reply.h"
#include "support/paths.h"
#include "support/replay_proposer.h"
#include "tokenizer/from_checkpoint.h"

namespace tf::engine {
namespace {

using test::collect;
using test::Reply;

constexpr int32_t kEos = 2;
constexpr int32_t kOpen = 300, kClose = 301;  // stand-ins for a family's think markers

class OutputRulesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = testing::shared_path("models/stories260K.gguf");
    if (!std::filesystem::exists(path)) return;
    auto ckpt = checkpoint::Checkpoint::open(path);
    ASSERT_TRUE(ckpt.ok()) << ckpt.error().message;
    auto tok = tokenizer::tokenizer_for(**ckpt);
    ASSERT_TRUE(tok.ok()) << tok.error().message;
    tok_ = *tok;
    vocab_ = grammar_vocabulary(*tok_);
    auto m = model::load_model(*ckpt, {2});
    ASSERT_TRUE(m.ok()) << m.error().message;
    model_ = std::shared_ptr<model::Model>(std::move(*m));
  }
  static void TearDownTestSuite() {
    model_.reset();
    tok_.reset();
    vocab_.reset();
  }
  void SetUp() override {
    if (!model_) GTEST_SKIP() << "missing ../shared/models/stories260K.gguf (see DATA.md)";
  }

  static EngineOptions options() {
    EngineOptions o;
    o.eog_ids = {kEos};
    o.kv_budget_bytes = int64_t{64} << 20;
    return o;
  }

  static std::shared_ptr<const grammar::CompiledGrammar> compile(grammar::GrammarSpec spec) {
    auto g = grammar::compile_grammar(spec, vocab_);
    EXPECT_TRUE(g.ok()) << g.error().message;
    return g.ok() ? *g : nullptr;
  }

  static Request make_request(RequestId id, float temperature, uint64_t seed, int max_tokens) {
    Request r;
    r.id = id;
    r.prompt = tok_->encode("Once upon a time, there was a little");
    r.prompt.push_back(3 + static_cast<int32_t>(id % 200));
    r.sampling.temperature = temperature;
    r.seed = seed;
    r.max_tokens = max_tokens;
    return r;
  }

  // The reply starts inside a reasoning block that the engine closes after `budget` tokens.
  static void start_in_reasoning(Request& r, int budget) {
    r.output.reasoning_close = {kClose};
    r.output.starts_in_reasoning = true;
    r.output.max_reasoning_tokens = budget;
  }

  static Reply solo(const Request& r) {
    Engine e(model_, options());
    auto ch = e.submit(r);
    EXPECT_TRUE(ch.ok()) << (ch.ok() ? "" : ch.error().message);
    return ch.ok() ? collect(**ch) : Reply{};
  }

  // The text a grammar saw: each token's bytes as it continues a sequence, end ids dropped.
  static std::string text(std::span<const int32_t> ids) {
    std::string s;
    for (int32_t id : ids) {
      if (id != kEos) s += tok_->token_bytes(id);
    }
    return s;
  }

  static std::shared_ptr<model::Model> model_;
  static std::shared_ptr<tokenizer::Tokenizer> tok_;
  static std::shared_ptr<const grammar::Vocabulary> vocab_;
};
std::shared_ptr<model::Model> OutputRulesTest::model_;
std::shared_ptr<tokenizer::Tokenizer> OutputRulesTest::tok_;
std::shared_ptr<const grammar::Vocabulary> OutputRulesTest::vocab_;

const char* kSchema = R"({"type": "object", "properties": {
  "color": {"enum": ["red", "green", "blue"]}, "big": {"type": "boolean"},
  "tag": {"type": "string", "maxLength": 6}}, "required": ["color", "big", "tag"],
  "additionalProperties": false})";

TEST_F(OutputRulesTest, MaskedRepliesFollowTheSchemaAndMatchSoloRuns) {
  auto g = compile({grammar::GrammarKind::kJsonSchema, kSchema, {}});
  ASSERT_TRUE(g);
  std::vector<Request> reqs;
  for (int i = 0; i < 8; ++i) {
    reqs.push_back(make_request(10 + i, i % 2 ? 1.0f : 0.0f, 40 + i, 96));
    reqs.back().output.grammar = g;
    if (i % 4 == 3) reqs.back().sampling.repetition_penalty = 1.3f;  // penalties, then the mask
  }
  Engine e(model_, options());
  std::vector<std::shared_ptr<Channel>> chans;
  for (const auto& r : reqs) {
    auto ch = e.submit(r);
    ASSERT_TRUE(ch.ok());
    chans.push_back(*ch);
  }
  // Every batched reply first: a solo engine stepping beside `e` would share the model, which
  // serves one engine at a time.
  std::vector<Reply> batched_replies;
  for (const auto& ch : chans) batched_replies.push_back(collect(*ch));
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Reply& batched = batched_replies[i];
    EXPECT_EQ(batched.ids, solo(reqs[i]).ids) << "request " << i;
    ASSERT_EQ(batched.reason, FinishReason::kStop) << text(batched.ids);
    EXPECT_EQ(batched.ids.back(), kEos);
    auto j = nlohmann::json::parse(text(batched.ids), nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << text(batched.ids);
    EXPECT_TRUE(j["color"] == "red" || j["color"] == "green" || j["color"] == "blue") << j;
    EXPECT_TRUE(j["big"].is_boolean()) << j;
    EXPECT_LE(j["tag"].get<std::string>().size(), 6u) << j;
    EXPECT_EQ(j.size(), 3u) << j;
  }
}

TEST_F(OutputRulesTest, UnmaskedRepliesAreNotJson) {  // the mask is what made them JSON
  Reply free = solo(make_request(10, 0.0f, 40, 24));
  EXPECT_TRUE(nlohmann::json::parse(text(free.ids), nullptr, false).is_discarded());
}

TEST_F(OutputRulesTest, BudgetClosesTheReasoningBlock) {
  Request r = make_request(20, 0.0f, 1, 12);
  r.ignore_eos = true;
  start_in_reasoning(r, 5);
  Reply got = solo(r);
  ASSERT_EQ(got.ids.size(), 12u);
  EXPECT_EQ(got.ids[5], kClose);  // written by the engine: the model's own sixth token differs
  EXPECT_EQ(got.usage.reasoning_tokens, 6);
  r.output = {};
  Reply free = solo(r);
  EXPECT_NE(free.ids[5], kClose);
  EXPECT_TRUE(std::equal(free.ids.begin(), free.ids.begin() + 5, got.ids.begin()));
}

TEST_F(OutputRulesTest, GrammarStartsAfterTheReasoningBlock) {
  auto g = compile({grammar::GrammarKind::kChoice, "", {"yes", "no"}});
  ASSERT_TRUE(g);
  for (float temperature : {0.0f, 1.0f}) {
    Request r = make_request(30, temperature, 9, 40);
    r.output.grammar = g;
    start_in_reasoning(r, 4);
    Reply got = solo(r);
    ASSERT_EQ(got.reason, FinishReason::kStop);
    ASSERT_GE(got.ids.size(), 6u);
    EXPECT_EQ(got.ids[4], kClose);
    const std::string answer = text(std::span(got.ids).subspan(5));
    EXPECT_TRUE(answer == "yes" || answer == "no") << answer;
    EXPECT_EQ(got.usage.reasoning_tokens, 5);
  }
}

TEST_F(OutputRulesTest, FirstTokenMayOpenTheBlockOrStartTheAnswer) {
  auto g = compile({grammar::GrammarKind::kChoice, "", {"yes", "no"}});
  ASSERT_TRUE(g);
  Request r = make_request(40, 0.0f, 3, 40);
  r.output.grammar = g;
  r.output.reasoning_open = kOpen;
  r.output.reasoning_close = {kClose};
  r.output.max_reasoning_tokens = 2;
  r.sampling.logit_bias = {{kOpen, 100.0f}};  // the model opens the block
  Reply opened = solo(r);
  ASSERT_EQ(opened.reason, FinishReason::kStop);
  ASSERT_GE(opened.ids.size(), 5u);
  EXPECT_EQ(opened.ids[0], kOpen);
  EXPECT_EQ(opened.ids[3], kClose);
  std::string answer = text(std::span(opened.ids).subspan(4));
  EXPECT_TRUE(answer == "yes" || answer == "no") << answer;
  EXPECT_EQ(opened.usage.reasoning_tokens, 4);

  r.sampling.logit_bias = {{kOpen, -100.0f}};  // it answers at once, under the grammar
  Reply answered = solo(r);
  ASSERT_EQ(answered.reason, FinishReason::kStop);
  answer = text(answered.ids);
  EXPECT_TRUE(answer == "yes" || answer == "no") << answer;
  EXPECT_EQ(answered.usage.reasoning_tokens, 0);
}

// The CPU model as a model that overlaps its steps and masks them on the device would: the
// default queued steps (Model::launch_decode, select_queued), argmaxes under the chunks' masks
// (a verify chunk's per position). Logits the step says it does not need are NaN, so a host
// draw from them would show.
class DeviceMaskingModel final : public model::Model {
 public:
  explicit DeviceMaskingModel(std::shared_ptr<model::Model> inner) : inner_(std::move(inner)) {}
  const checkpoint::ModelConfig& config() const override { return inner_->config(); }
  Status forward(std::span<const model::SeqChunk> batch, model::KvCache& kv,
                 float* logits) override {
    return inner_->forward(batch, kv, logits);
  }
  Status forward_argmax(std::span<const model::SeqChunk> batch, model::KvCache& kv, float* logits,
                        int32_t* argmax, bool logits_needed) override {
    TF_RETURN_IF_ERROR(inner_->forward(batch, kv, logits));
    const int64_t vocab = config().vocab_size;
    int64_t row = 0;
    for (const model::SeqChunk& c : batch) {
      for (int64_t k = 0; k < c.n_logits; ++k, ++row) {
        float* x = logits + row * vocab;
        std::span<const uint32_t> mask = c.mask;
        if (static_cast<size_t>(k) < c.row_masks.size()) {
          mask = c.row_masks[k];
          stats.masked_drafted += mask.empty() ? 0 : 1;
        }
        for (int64_t id = 0; !mask.empty() && id < vocab; ++id) {
          if (!((mask[id / 32] >> (id % 32)) & 1)) x[id] = -std::numeric_limits<float>::infinity();
        }
        argmax[row] = static_cast<int32_t>(std::max_element(x, x + vocab) - x);
        if (!logits_needed) std::fill(x, x + vocab, std::numeric_limits<float>::quiet_NaN());
        ++stats.argmaxes;
        stats.masked += mask.empty() ? 0 : 1;
      }
    }
    return {};
  }
  bool overlaps_steps() const override { return true; }
  bool masks_on_device() const override { return true; }
  size_t weight_bytes() const override { return inner_->weight_bytes(); }

  struct {
    int64_t argmaxes = 0, masked = 0, masked_drafted = 0;
  } stats;

 private:
  std::shared_ptr<model::Model> inner_;
};

// Rows under a grammar, a reasoning budget (the engine's forced close) and none, batched on
// overlapped steps whose masks follow their tokens: the same replies as plain steps, and as the
// host's masked draws.
TEST_F(OutputRulesTest, OverlappedStepsUnderDeviceMasksReplyAsPlainSteps) {
  auto g = compile({grammar::GrammarKind::kJsonSchema, kSchema, {}});
  ASSERT_TRUE(g);
  std::vector<Request> reqs;
  for (int i = 0; i < 6; ++i) {
    reqs.push_back(make_request(60 + i, 0.0f, 1, 48));
    if (i % 3 != 2) reqs.back().output.grammar = g;
    if (i % 3 == 1) start_in_reasoning(reqs.back(), 3 + i);
  }
  auto run = [&](std::shared_ptr<model::Model> m, bool overlap, int64_t* overlapped) {
    EngineOptions o = options();
    o.overlap = overlap;
    Engine e(std::move(m), o);
    std::vector<std::shared_ptr<Channel>> chans;
    for (const auto& r : reqs) chans.push_back(*e.submit(r));
    std::vector<Reply> out;
    for (auto& ch : chans) out.push_back(collect(*ch));
    if (overlapped) *overlapped = e.stats().overlapped_steps;
    return out;
  };
  auto device = std::make_shared<DeviceMaskingModel>(model_);
  int64_t overlapped = 0;
  const std::vector<Reply> chained = run(device, true, &overlapped);
  EXPECT_GT(overlapped, 20);  // the masked rows stayed on the chain
  EXPECT_GT(device->stats.masked, 40);
  const std::vector<Reply> plain = run(device, false, nullptr);
  const std::vector<Reply> host = run(model_, false, nullptr);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(chained[i].ids, plain[i].ids) << "request " << i;
    EXPECT_EQ(chained[i].ids, host[i].ids) << "request " << i;
    EXPECT_EQ(chained[i].reason, host[i].reason) << "request " << i;
    if (reqs[i].output.grammar && !reqs[i].output.tracks_reasoning()) {
      EXPECT_FALSE(nlohmann::json::parse(text(chained[i].ids), nullptr, false).is_discarded())
          << text(chained[i].ids);
    }
  }
}

// The same rows drafted (every draft right, then every draft wrong) on the device-masking model:
// each verify position under its own mask, the rules advanced through the drafts before it, and
// the replies the host's serial masked draws (a row with logprobs drafts on the host's masks).
TEST_F(OutputRulesTest, DraftedRowsUnderDeviceMasksReplyAsSerialOnes) {
  auto g = compile({grammar::GrammarKind::kJsonSchema, kSchema, {}});
  ASSERT_TRUE(g);
  std::vector<Request> reqs;
  for (int i = 0; i < 6; ++i) {
    reqs.push_back(make_request(80 + i, 0.0f, 1, 48));
    reqs.back().output.grammar = g;
    if (i == 2) reqs.back().logprobs = 0;  // drawn on the host, its logits unmasked there
    if (i % 2 == 1) start_in_reasoning(reqs.back(), 3 + i);
  }
  auto run = [&](std::shared_ptr<model::Model> m, std::shared_ptr<draft::Proposer> p,
                 EngineStats* stats) {
    EngineOptions o = options();
    o.draft.proposer = std::move(p);
    o.draft.fixed_depth = 4;
    o.draft.cost = draft::VerifyCost{};
    Engine e(std::move(m), o);
    std::vector<std::shared_ptr<Channel>> chans;
    for (auto r : reqs) {
      r.draft = o.draft.proposer != nullptr;
      chans.push_back(*e.submit(r));
    }
    std::vector<Reply> out;
    for (auto& ch : chans) out.push_back(collect(*ch));
    if (stats) *stats = e.stats();
    return out;
  };
  const std::vector<Reply> want = run(model_, nullptr, nullptr);
  const int vocab = model_->config().vocab_size;
  for (int offset : {0, 1}) {
    SCOPED_TRACE(offset == 0 ? "right drafts" : "wrong drafts");
    auto proposer = std::make_shared<test::ReplayProposer>(offset, vocab);
    for (size_t i = 0; i < reqs.size(); ++i) proposer->set(reqs[i].id, want[i].ids);
    auto device = std::make_shared<DeviceMaskingModel>(model_);
    EngineStats st;
    const std::vector<Reply> got = run(device, proposer, &st);
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(got[i].ids, want[i].ids) << "request " << i;
      EXPECT_EQ(got[i].logprobs, want[i].logprobs) << "request " << i;
      EXPECT_EQ(got[i].reason, want[i].reason) << "request " << i;
    }
    if (offset == 0) {
      EXPECT_GT(device->stats.masked_drafted, 40);  // drafted positions masked on the device
      EXPECT_EQ(st.accepted_tokens, st.draft_tokens);
      EXPECT_GT(st.accepted_tokens, 60);
    } else {
      EXPECT_EQ(st.accepted_tokens, 0);  // wrong ids the grammar allows were verified and refused
    }
  }
}

TEST_F(OutputRulesTest, RulesOutsideTheVocabularyAreRefused) {
  Engine e(model_, options());
  Request r = make_request(50, 0.0f, 1, 4);
  r.output.reasoning_close = {1 << 20};
  EXPECT_FALSE(e.submit(r).ok());
}

}  // namespace
}  // namespace tf::engine
