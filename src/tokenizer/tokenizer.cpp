// Tokenizer module entry points live beside their loaders (gguf_vocab.cpp, hf_json.cpp); this
// file keeps the interface's out-of-line pieces.
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {}  // namespace tf::tokenizer
