// --draft-model: open and load the draft model, check its tokenizer, make its proposer.
#include "cli/draft_options.h"

#include "cli/open_model.h"
#include "engine/draft/draft_model.h"

namespace tf::cli {

void add_draft_options(CLI::App& cmd, DraftArgs& a) {
  cmd.add_option("--draft-model", a.model,
                 "A smaller model with the same tokenizer that drafts tokens (default: drafts "
                 "copied from the context)");
  cmd.add_option("--draft-kv-gib", a.kv_gib, "The draft model's KV pool in GiB")
      ->check(CLI::Range(0.001, 1024.0));
  cmd.add_option("--draft-depth", a.depth,
                 "Draft this many tokens a step for every row that can, whatever they cost or "
                 "keep (default: each stream's depth from the measured verify cost and its "
                 "acceptance)")
      ->check(CLI::Range(1, 16));
}

namespace {

// The same ids mean the same bytes in both, or the drafts would be another language.
bool same_tokens(const tokenizer::Tokenizer& a, const tokenizer::Tokenizer& b) {
  if (a.vocab_size() != b.vocab_size()) return false;
  for (int id = 0; id < a.vocab_size(); ++id) {
    if (a.token_bytes(id) != b.token_bytes(id)) return false;
  }
  return true;
}

}  // namespace

Result<std::shared_ptr<engine::draft::Proposer>> load_draft_model(
    const DraftArgs& a, const model::LoadOptions& load, const tokenizer::Tokenizer& served_tokenizer,
    int served_vocab) {
  if (a.model.empty()) return std::shared_ptr<engine::draft::Proposer>();
  TF_ASSIGN_OR_RETURN(auto opened, open_model(a.model));
  if (!same_tokens(*opened.tokenizer, served_tokenizer)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--draft-model {}: its tokenizer differs from the served model's (a draft "
                      "model must share it)",
                      a.model);
  }
  TF_ASSIGN_OR_RETURN(auto loaded, model::load_model(opened.ckpt, load));
  TF_ASSIGN_OR_RETURN(auto proposer,
                      engine::draft::DraftModelProposer::create(
                          std::shared_ptr<model::Model>(std::move(loaded)), served_vocab,
                          static_cast<int64_t>(a.kv_gib * (1 << 30))));
  return std::shared_ptr<engine::draft::Proposer>(std::move(proposer));
}

}  // namespace tf::cli
