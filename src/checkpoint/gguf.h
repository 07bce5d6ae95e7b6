// GGUF v2/v3 reader: metadata key/values (every value type, nested arrays) and the tensor table,
// over a memory-mapped file. Every offset and count is validated; a malformed file is an Error.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/mapped_file.h"
#include "base/result.h"
#include "tensor/tensor.h"

namespace tf::checkpoint {

// GGUF metadata value type ids (gguf spec `gguf_metadata_value_type`).
enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

struct GgufValue;
using GgufArray = std::vector<GgufValue>;

struct GgufValue {
  GgufType type = GgufType::kU8;
  // Integers of every width widen to int64 (u64 above INT64_MAX keeps its bits in `u`);
  // floats to double; arrays keep their element type in `elem_type`.
  std::variant<int64_t, uint64_t, double, bool, std::string, std::shared_ptr<GgufArray>> v;
  GgufType elem_type = GgufType::kU8;  // only for arrays

  bool is_int() const;
  bool is_float() const { return type == GgufType::kF32 || type == GgufType::kF64; }
  bool is_string() const { return type == GgufType::kString; }
  bool is_array() const { return type == GgufType::kArray; }
};

struct GgufTensorInfo {
  std::string name;
  uint32_t ggml_type = 0;
  Tensor tensor;        // dtype, shape outermost-first (GGUF `ne` reversed) and data pointer
  uint64_t offset = 0;  // relative to the start of the data section
  uint64_t nbytes = 0;  // bytes of data, from the ggml block layout
  // False when ggml_type has no DType (IQ*, Q8_1, ...): the file still opens and `tensor.data` and
  // `tensor.shape` are set, but `tensor.dtype` is meaningless; get_tensor() reports it.
  bool supported = true;
};

// Elements per block and bytes per block of a ggml type id, also for types without a DType;
// false for ids unknown to this build.
bool ggml_block_layout(uint32_t ggml_type, int* block_size, int* block_bytes);

class GgufFile {
 public:
  // Maps and parses `path`; errors are prefixed with the path.
  static Result<std::shared_ptr<GgufFile>> open(const std::string& path);
  // Parses bytes the caller keeps alive (fuzzing, tests); `name` prefixes errors.
  static Result<std::shared_ptr<GgufFile>> parse(std::span<const uint8_t> bytes, std::string name);

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }

  const std::map<std::string, GgufValue, std::less<>>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;

  // Typed getters: kNotFound when absent, kInvalidArgument (naming the key) when of another type.
  Result<std::string> get_string(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;       // any integer type (u64 > 2^63 fails)
  Result<double> get_float(std::string_view key) const;      // f32/f64, and integers
  Result<bool> get_bool(std::string_view key) const;
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<float>> get_float_array(std::string_view key) const;
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // The tensor view, or kNotFound / kUnsupported (unsupported ggml type) naming file and tensor.
  Result<const Tensor*> get_tensor(std::string_view name) const;
  // Absolute file offset of the data section (0 when the file has no tensors).
  uint64_t data_offset() const { return data_offset_; }

 private:
  std::string name_;
  MappedFile file_;  // empty when parsed from caller-owned bytes
  uint32_t version_ = 0;
  size_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::map<std::string, GgufValue, std::less<>> kv_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;

  friend class GgufParser;
};

}  // namespace tf::checkpoint
