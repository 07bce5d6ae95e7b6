// Mistral: the Llama block with sliding-window attention (config `sliding_window`: a query at p
// sees positions (p - window, p]), which spec_from_config already applies per layer.
#include "model/blocks.h"
#include "model/families/families.h"

namespace tf::model {

Result<std::unique_ptr<Model>> make_mistral(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                            std::shared_ptr<ThreadPool> pool) {
  DecoderSpec spec = spec_from_config(*ckpt);
  return make_decoder(std::move(ckpt), std::move(pool), std::move(spec));
}

}  // namespace tf::model
