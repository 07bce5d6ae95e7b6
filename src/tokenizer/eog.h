// Which tokens end generation besides EOS: the end-of-turn spellings llama.cpp also recognises.
#pragma once

#include <string_view>

namespace tf::tokenizer {

inline bool is_eog_name(std::string_view t) {
  for (std::string_view name :
       {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
        "<EOT>", "<|end_of_text|>", "<｜end▁of▁sentence｜>", "<|return|>", "<|call|>"}) {
    if (t == name) return true;
  }
  return false;
}

}  // namespace tf::tokenizer
