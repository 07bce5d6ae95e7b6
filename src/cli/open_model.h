// What every command that runs a model does first: open the checkpoint and its tokenizer, and
// refuse an unsupported architecture by name before any weights load.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "checkpoint/checkpoint.h"
#include "tokenizer/tokenizer.h"

namespace tf::cli {

struct OpenedModel {
  std::shared_ptr<checkpoint::Checkpoint> ckpt;
  std::shared_ptr<tokenizer::Tokenizer> tokenizer;
};

Result<OpenedModel> open_model(const std::string& path);

// The tokenizer's end-of-generation ids, for EngineOptions::eog_ids.
std::vector<int32_t> eog_ids(const tokenizer::Tokenizer& tok);

}  // namespace tf::cli
