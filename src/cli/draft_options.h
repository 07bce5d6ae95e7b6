// The serve command's drafting options: the draft model (`--draft-model PATH`, `--draft-kv-gib G`),
// loaded beside the served model on its backend and refused unless its tokenizer is the served
// model's, and a fixed depth (`--draft-depth N`) in place of the measured-cost policy.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "base/result.h"
#include "engine/draft/proposer.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace tf::cli {

struct DraftArgs {
  std::string model;   // empty: drafts are context copies
  double kv_gib = 1.0;  // the draft model's own KV pool
  int depth = 0;        // drafts a row every step; 0: the depth the verify cost and acceptance pick
};

void add_draft_options(CLI::App& cmd, DraftArgs& a);

// The proposer for --draft-model (null when none was given).
Result<std::shared_ptr<engine::draft::Proposer>> load_draft_model(
    const DraftArgs& a, const model::LoadOptions& load, const tokenizer::Tokenizer& served_tokenizer,
    int served_vocab);

}  // namespace tf::cli
