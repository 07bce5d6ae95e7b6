// Checkpoint: the module's public face. Opens a .gguf file or an HF directory (config.json +
// safetensors), exposes its ModelConfig and its tensors by their on-disk names.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "checkpoint/gguf.h"
#include "checkpoint/model_config.h"
#include "checkpoint/safetensors.h"
#include "tensor/tensor.h"

namespace tf::checkpoint {

enum class Format { kGguf, kHuggingFace };

class Checkpoint {
 public:
  // `path` is a .gguf file or a directory with config.json. Reads headers only; weights stay mapped.
  static Result<std::shared_ptr<Checkpoint>> open(const std::string& path);

  Format format() const { return format_; }
  const std::string& path() const { return path_; }
  const ModelConfig& config() const { return config_; }

  // nullptr when absent or of an unsupported dtype; get() returns an Error that says which.
  const Tensor* find(std::string_view name) const;
  Result<const Tensor*> get(std::string_view name) const;
  std::vector<std::string> tensor_names() const;

  // The GGUF file (GGUF format) or nullptr.
  const GgufFile* gguf() const { return gguf_.get(); }
  // HF directory only: the directory path, so tokenizer.json etc. can be found beside it.
  const std::string& dir() const { return dir_; }

 private:
  Format format_ = Format::kGguf;
  std::string path_, dir_;
  ModelConfig config_;
  std::shared_ptr<GgufFile> gguf_;
  std::shared_ptr<SafetensorsFile> st_;
};

}  // namespace tf::checkpoint
