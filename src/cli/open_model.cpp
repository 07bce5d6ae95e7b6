// open_model() and eog_ids().
#include "cli/open_model.h"

#include "model/model.h"
#include "tokenizer/from_checkpoint.h"

namespace tf::cli {

Result<OpenedModel> open_model(const std::string& path) {
  TF_ASSIGN_OR_RETURN(auto ckpt, checkpoint::Checkpoint::open(path));
  if (auto s = model::check_supported(ckpt->config()); !s.ok()) {
    return s.error().with_context(path);
  }
  TF_ASSIGN_OR_RETURN(auto tok, tokenizer::tokenizer_for(*ckpt));
  return OpenedModel{std::move(ckpt), std::move(tok)};
}

std::vector<int32_t> eog_ids(const tokenizer::Tokenizer& tok) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    if (tok.is_eog(id)) ids.push_back(id);
  }
  return ids;
}

}  // namespace tf::cli
