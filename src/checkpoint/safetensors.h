// safetensors reader: one file, or a sharded set named by model.safetensors.index.json; the
// header's `__metadata__` aliases (a tensor stored once under two names) resolve to the same data.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "base/result.h"
#include "tensor/tensor.h"

namespace tf::checkpoint {

class SafetensorsFile {
 public:
  // One .safetensors file.
  static Result<std::shared_ptr<SafetensorsFile>> open(const std::string& path);
  // Every shard of a directory: model.safetensors.index.json if present, else model.safetensors.
  static Result<std::shared_ptr<SafetensorsFile>> open_dir(const std::string& dir);
  // Parses caller-owned bytes (fuzzing, tests).
  static Result<std::shared_ptr<SafetensorsFile>> parse(std::span<const uint8_t> bytes,
                                                        std::string name);

  // nullptr when absent or of an unsupported dtype (I64, F8, ...); get() says which.
  const Tensor* find(std::string_view name) const;
  Result<const Tensor*> get(std::string_view name) const;
  // Every tensor name, aliases and unsupported-dtype tensors included, sorted.
  std::vector<std::string> names() const;
  // alias -> stored name, from `__metadata__`.
  const std::map<std::string, std::string, std::less<>>& aliases() const { return aliases_; }
  // name -> safetensors dtype string, for tensors kept out of find() because of their dtype.
  const std::map<std::string, std::string, std::less<>>& unsupported() const {
    return unsupported_;
  }
  const std::map<std::string, std::string, std::less<>>& metadata() const { return metadata_; }

 private:
  std::vector<MappedFile> files_;
  std::map<std::string, Tensor, std::less<>> tensors_;
  std::map<std::string, std::string, std::less<>> metadata_;
  std::map<std::string, std::string, std::less<>> aliases_;
  std::map<std::string, std::string, std::less<>> unsupported_;

  friend class SafetensorsParser;
};

}  // namespace tf::checkpoint
