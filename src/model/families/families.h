// Constructors of the architecture families the registry knows.
#pragma once

#include <memory>

#include "base/result.h"
#include "base/thread_pool.h"
#include "checkpoint/checkpoint.h"
#include "model/model.h"

namespace tf::model {

// Llama family (Llama 1-3, SmolLM, TinyStories, Mistral without sliding window).
Result<std::unique_ptr<Model>> make_llama(std::shared_ptr<checkpoint::Checkpoint> ckpt,
                                          std::shared_ptr<ThreadPool> pool);

}  // namespace tf::model
