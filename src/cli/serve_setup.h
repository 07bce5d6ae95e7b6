// Start-up helpers for `serve`: the default model's path, the chat template and generation
// defaults a checkpoint ships, and paging weights in with a progress bar.
#pragma once

#include <atomic>
#include <optional>
#include <string>

#include "api/service.h"
#include "chat/chat_template.h"
#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace tf::cli {

std::string default_model_path();
// The chat template a model ships: GGUF `tokenizer.chat_template` (gguf non-null), else
// tokenizer_config.json or chat_template.jinja in `dir`; the error names what is missing or bad.
Result<chat::ChatTemplate> find_chat_template(const checkpoint::GgufFile* gguf,
                                              const std::string& dir,
                                              const tokenizer::Tokenizer& tok);
// serve's use of it: nullopt, with a warning, when there is none or it does not parse.
std::optional<chat::ChatTemplate> load_chat_template(const checkpoint::Checkpoint& ckpt,
                                                     const tokenizer::Tokenizer& tok);
// HF generation_config.json's sampling defaults; the API's defaults otherwise.
api::Defaults generation_defaults(const checkpoint::Checkpoint& ckpt);
// Touches every page of the mapped weights so the first request does not pay for page faults;
// draws a progress bar on stderr when it is a terminal.
void prefault_weights(const checkpoint::Checkpoint& ckpt);

}  // namespace tf::cli
