// Picks the tokenizer a checkpoint ships: GGUF metadata, or tokenizer.json beside an HF model.
#pragma once

#include <memory>

#include "base/result.h"
#include "checkpoint/checkpoint.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {

Result<std::shared_ptr<Tokenizer>> tokenizer_for(const checkpoint::Checkpoint& ckpt);

}  // namespace tf::tokenizer
