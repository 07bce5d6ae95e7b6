// GGUF v2/v3 parser. The file is untrusted: every count is bounded by the bytes left before
// anything is allocated, and every tensor's extent is checked against the mapped data section.
#include "checkpoint/gguf.h"

#include <cstring>
#include <limits>

#include "checkpoint/utf8.h"

namespace tf::checkpoint {

namespace {

constexpr int kMaxArrayDepth = 8;  // llama.cpp itself never nests; deeper is hostile
constexpr uint32_t kMaxDims = 4;   // GGML_MAX_DIMS

const char* type_name(GgufType t) {
  static constexpr const char* kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                           "bool", "string", "array", "u64", "i64", "f64"};
  auto i = static_cast<uint32_t>(t);
  return i < 13 ? kNames[i] : "invalid";
}

// Smallest encoding of one value of `t`: bounds array counts by the bytes left in the file.
uint64_t min_value_bytes(GgufType t) {
  switch (t) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kBool:
      return 1;
    case GgufType::kU16:
    case GgufType::kI16:
      return 2;
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kF32:
      return 4;
    case GgufType::kU64:
    case GgufType::kI64:
    case GgufType::kF64:
    case GgufType::kString:
      return 8;
    case GgufType::kArray:
      return 12;  // u32 element type + u64 count
  }
  return 1;
}

uint64_t read_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

}  // namespace

// Block layout of every ggml type id, including those without a DType, so that a file holding an
// unsupported type still has its extents checked and opens (the tensor is then marked unsupported).
bool ggml_block_layout(uint32_t ggml_type, int* block_size, int* block_bytes) {
  if (auto dt = dtype_from_ggml(ggml_type)) {
    *block_size = dtype_info(*dt).block_size;
    *block_bytes = dtype_info(*dt).block_bytes;
    return true;
  }
  struct L {
    uint32_t id;
    int bs, bb;
  };
  static constexpr L kOther[] = {
      {9, 32, 36},  {15, 256, 292}, {16, 256, 66}, {17, 256, 74},  {18, 256, 98}, {19, 256, 50},
      {20, 32, 18}, {21, 256, 110}, {22, 256, 82}, {23, 256, 136}, {24, 1, 1},    {25, 1, 2},
      {27, 1, 8},   {28, 1, 8},     {29, 256, 56}, {34, 256, 54},  {35, 256, 66}, {39, 32, 17},
  };
  for (const auto& l : kOther) {
    if (l.id == ggml_type) {
      *block_size = l.bs;
      *block_bytes = l.bb;
      return true;
    }
  }
  return false;
}

bool GgufValue::is_int() const {
  switch (type) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kU16:
    case GgufType::kI16:
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kU64:
    case GgufType::kI64:
      return true;
    default:
      return false;
  }
}

class GgufParser {
 public:
  GgufParser(std::span<const uint8_t> b, GgufFile& f) : b_(b), f_(f) {}

  Status run() {
    if (b_.size() < 4 || std::memcmp(b_.data(), "GGUF", 4) != 0)
      return corrupt("not a GGUF file (bad magic)");
    pos_ = 4;
    uint32_t version = 0;
    TF_RETURN_IF_ERROR(u32(&version, "version"));
    if (version != 2 && version != 3) {
      return make_error(ErrorCode::kUnsupported, "unsupported GGUF version {} (want 2 or 3)",
                        version);
    }
    f_.version_ = version;
    uint64_t n_tensors = 0, n_kv = 0;
    TF_RETURN_IF_ERROR(u64(&n_tensors, "tensor count"));
    TF_RETURN_IF_ERROR(u64(&n_kv, "metadata count"));
    // A kv pair takes at least 13 bytes (key length, type, 1-byte value); a tensor info 24.
    if (n_kv > left() / 13)
      return corrupt("metadata count {} is larger than the file allows", n_kv);
    if (n_tensors > left() / 24) {
      return corrupt("tensor count {} is larger than the file allows", n_tensors);
    }
    for (uint64_t i = 0; i < n_kv; ++i) TF_RETURN_IF_ERROR(read_kv(i));
    TF_RETURN_IF_ERROR(read_alignment());
    f_.tensors_.reserve(n_tensors);
    for (uint64_t i = 0; i < n_tensors; ++i) TF_RETURN_IF_ERROR(read_tensor_info(i));
    return place_tensors();
  }

 private:
  template <typename... Args>
  static Error corrupt(fmt::format_string<Args...> f, Args&&... args) {
    return make_error(ErrorCode::kCorrupt, f, std::forward<Args>(args)...);
  }
  uint64_t left() const { return b_.size() - pos_; }

  Status need(uint64_t n, std::string_view what) {
    if (n > left()) {
      return corrupt("truncated: {} needs {} bytes at offset {}, file has {}", what, n, pos_,
                     b_.size());
    }
    return {};
  }
  Status u32(uint32_t* v, std::string_view what) {
    TF_RETURN_IF_ERROR(need(4, what));
    *v = static_cast<uint32_t>(read_le(b_.data() + pos_, 4));
    pos_ += 4;
    return {};
  }
  Status u64(uint64_t* v, std::string_view what) {
    TF_RETURN_IF_ERROR(need(8, what));
    *v = read_le(b_.data() + pos_, 8);
    pos_ += 8;
    return {};
  }
  Status str(std::string* s, std::string_view what) {
    uint64_t n = 0;
    TF_RETURN_IF_ERROR(u64(&n, what));
    if (n > left()) {
      return corrupt("truncated: {} of length {} at offset {} extends past end of file (size {})",
                     what, n, pos_ - 8, b_.size());
    }
    s->assign(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return {};
  }

  Status read_value(GgufType t, int depth, GgufValue* out, const std::string& key) {
    out->type = t;
    switch (t) {
      case GgufType::kU8:
      case GgufType::kI8:
      case GgufType::kU16:
      case GgufType::kI16:
      case GgufType::kU32:
      case GgufType::kI32:
      case GgufType::kU64:
      case GgufType::kI64: {
        int n = static_cast<int>(min_value_bytes(t));
        TF_RETURN_IF_ERROR(need(n, key));
        uint64_t raw = read_le(b_.data() + pos_, n);
        pos_ += n;
        bool is_signed =
            t == GgufType::kI8 || t == GgufType::kI16 || t == GgufType::kI32 || t == GgufType::kI64;
        if (is_signed) {
          int shift = 64 - 8 * n;  // sign-extend through an arithmetic shift
          out->v = static_cast<int64_t>(raw << shift) >> shift;
        } else if (raw > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          out->v = raw;
        } else {
          out->v = static_cast<int64_t>(raw);
        }
        return {};
      }
      case GgufType::kF32: {
        TF_RETURN_IF_ERROR(need(4, key));
        float f;
        std::memcpy(&f, b_.data() + pos_, 4);
        pos_ += 4;
        out->v = static_cast<double>(f);
        return {};
      }
      case GgufType::kF64: {
        TF_RETURN_IF_ERROR(need(8, key));
        double d;
        std::memcpy(&d, b_.data() + pos_, 8);
        pos_ += 8;
        out->v = d;
        return {};
      }
      case GgufType::kBool: {
        TF_RETURN_IF_ERROR(need(1, key));
        uint8_t c = b_[pos_++];
        if (c > 1) return corrupt("metadata '{}': bool value {} is neither 0 nor 1", key, c);
        out->v = c != 0;
        return {};
      }
      case GgufType::kString: {
        std::string s;
        TF_RETURN_IF_ERROR(str(&s, fmt::format("metadata '{}' string", key)));
        out->v = std::move(s);
        return {};
      }
      case GgufType::kArray: {
        if (depth >= kMaxArrayDepth) {
          return corrupt("metadata '{}': arrays nested deeper than {}", key, kMaxArrayDepth);
        }
        uint32_t et = 0;
        uint64_t n = 0;
        TF_RETURN_IF_ERROR(u32(&et, key));
        if (et > 12) return corrupt("metadata '{}': invalid array element type {}", key, et);
        TF_RETURN_IF_ERROR(u64(&n, key));
        auto elem = static_cast<GgufType>(et);
        if (n > left() / min_value_bytes(elem)) {
          return corrupt("metadata '{}': array of {} {} elements is larger than the file allows",
                         key, n, type_name(elem));
        }
        auto arr = std::make_shared<GgufArray>();
        arr->resize(n);
        for (auto& e : *arr) TF_RETURN_IF_ERROR(read_value(elem, depth + 1, &e, key));
        out->elem_type = elem;
        out->v = std::move(arr);
        return {};
      }
    }
    return corrupt("metadata '{}': invalid value type {}", key, static_cast<uint32_t>(t));
  }

  Status read_kv(uint64_t i) {
    std::string key;
    TF_RETURN_IF_ERROR(str(&key, fmt::format("metadata key #{}", i)));
    if (key.empty()) return corrupt("metadata key #{} is empty", i);
    if (!valid_utf8(key)) return corrupt("metadata key #{} is not valid UTF-8", i);
    if (f_.kv_.count(key)) return corrupt("duplicate metadata key '{}'", key);
    uint32_t t = 0;
    TF_RETURN_IF_ERROR(u32(&t, fmt::format("metadata '{}' type", key)));
    if (t > 12) return corrupt("metadata '{}': invalid value type {}", key, t);
    GgufValue v;
    TF_RETURN_IF_ERROR(read_value(static_cast<GgufType>(t), 0, &v, key));
    f_.kv_.emplace(std::move(key), std::move(v));
    return {};
  }

  Status read_alignment() {
    const GgufValue* a = f_.find("general.alignment");
    if (!a) return {};
    auto v = f_.get_int("general.alignment");
    if (!v.ok()) return corrupt("general.alignment is not an integer");
    int64_t al = *v;
    if (al <= 0 || al > (1 << 30) || (al & (al - 1)) != 0) {
      return corrupt("general.alignment {} is not a power of two", al);
    }
    f_.alignment_ = static_cast<size_t>(al);
    return {};
  }

  Status read_tensor_info(uint64_t i) {
    GgufTensorInfo t;
    TF_RETURN_IF_ERROR(str(&t.name, fmt::format("tensor #{} name", i)));
    if (t.name.empty()) return corrupt("tensor #{} has an empty name", i);
    if (!valid_utf8(t.name)) return corrupt("tensor #{} name is not valid UTF-8", i);
    if (f_.tensor_index_.count(t.name)) return corrupt("duplicate tensor name '{}'", t.name);
    uint32_t n_dims = 0;
    TF_RETURN_IF_ERROR(u32(&n_dims, t.name));
    if (n_dims > kMaxDims) {
      return corrupt("tensor '{}' has {} dimensions (at most {})", t.name, n_dims, kMaxDims);
    }
    uint64_t ne[kMaxDims] = {1, 1, 1, 1};
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      TF_RETURN_IF_ERROR(u64(&ne[d], t.name));
      if (ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          (ne[d] != 0 &&
           numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ne[d])) {
        return corrupt("tensor '{}' element count overflows", t.name);
      }
      numel *= ne[d];
    }
    TF_RETURN_IF_ERROR(u32(&t.ggml_type, t.name));
    TF_RETURN_IF_ERROR(u64(&t.offset, t.name));
    int bs = 0, bb = 0;
    if (!ggml_block_layout(t.ggml_type, &bs, &bb)) {
      return corrupt("tensor '{}' has unknown ggml type {}", t.name, t.ggml_type);
    }
    if (ne[0] % static_cast<uint64_t>(bs) != 0) {
      return corrupt(
          "tensor '{}' ({}): innermost dimension {} is not a multiple of the block size {}", t.name,
          ggml_type_name(t.ggml_type), ne[0], bs);
    }
    // Divide before multiplying: the element count alone may already be near 2^63.
    uint64_t blocks = numel / static_cast<uint64_t>(bs);
    if (blocks > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(bb)) {
      return corrupt("tensor '{}' byte size overflows", t.name);
    }
    t.nbytes = blocks * static_cast<uint64_t>(bb);
    if (t.offset % f_.alignment_ != 0) {
      return corrupt("tensor '{}' offset {} is not a multiple of the alignment {}", t.name,
                     t.offset, f_.alignment_);
    }
    auto dt = dtype_from_ggml(t.ggml_type);
    t.supported = dt.has_value();
    t.tensor.dtype = dt.value_or(DType::kF32);
    for (uint32_t d = n_dims; d-- > 0;) t.tensor.shape.push_back(static_cast<int64_t>(ne[d]));
    f_.tensor_index_.emplace(t.name, f_.tensors_.size());
    f_.tensors_.push_back(std::move(t));
    return {};
  }

  Status place_tensors() {
    uint64_t al = f_.alignment_;
    uint64_t start = (pos_ + al - 1) / al * al;
    if (f_.tensors_.empty()) return {};  // vocab-only files may end before the padding
    if (start > b_.size()) {
      return corrupt("data section at offset {} starts past end of file (size {})", start,
                     b_.size());
    }
    f_.data_offset_ = start;
    uint64_t avail = b_.size() - start;
    for (auto& t : f_.tensors_) {
      if (t.offset > avail || t.nbytes > avail - t.offset) {
        return corrupt("tensor '{}' data [offset {}, {} bytes] extends past end of file (size {})",
                       t.name, start + t.offset, t.nbytes, b_.size());
      }
      t.tensor.data = b_.data() + start + t.offset;
    }
    return {};
  }

  std::span<const uint8_t> b_;
  GgufFile& f_;
  uint64_t pos_ = 0;
};

Result<std::shared_ptr<GgufFile>> GgufFile::parse(std::span<const uint8_t> bytes,
                                                  std::string name) {
  auto f = std::make_shared<GgufFile>();
  f->name_ = std::move(name);
  GgufParser p(bytes, *f);
  if (auto s = p.run(); !s.ok()) return s.error().with_context(f->name_);
  return f;
}

Result<std::shared_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  TF_ASSIGN_OR_RETURN(MappedFile m, MappedFile::open(path));
  auto bytes = m.bytes();
  TF_ASSIGN_OR_RETURN(auto f, parse(bytes, path));
  f->file_ = std::move(m);  // the mapping moves, its address does not
  return f;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Result<const Tensor*> GgufFile::get_tensor(std::string_view name) const {
  const GgufTensorInfo* t = find_tensor(name);
  if (!t) return make_error(ErrorCode::kNotFound, "{}: no tensor '{}'", name_, name);
  if (!t->supported) {
    return make_error(ErrorCode::kUnsupported, "{}: tensor '{}' has unsupported ggml type {} ({})",
                      name_, name, ggml_type_name(t->ggml_type), t->ggml_type);
  }
  return &t->tensor;
}

namespace {

Result<const GgufValue*> lookup(const GgufFile& f, std::string_view key) {
  const GgufValue* v = f.find(key);
  if (!v) return make_error(ErrorCode::kNotFound, "{}: no metadata key '{}'", f.name(), key);
  return v;
}

Error wrong_type(const GgufFile& f, std::string_view key, const GgufValue& v, const char* want) {
  std::string got = type_name(v.type);
  if (v.is_array()) got = fmt::format("array of {}", type_name(v.elem_type));
  return make_error(ErrorCode::kInvalidArgument, "{}: metadata '{}' is {}, expected {}", f.name(),
                    key, got, want);
}

Result<const GgufArray*> lookup_array(const GgufFile& f, std::string_view key) {
  TF_ASSIGN_OR_RETURN(const GgufValue* v, lookup(f, key));
  if (!v->is_array()) return wrong_type(f, key, *v, "an array");
  return std::get<std::shared_ptr<GgufArray>>(v->v).get();
}

}  // namespace

Result<std::string> GgufFile::get_string(std::string_view key) const {
  TF_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (!v->is_string()) return wrong_type(*this, key, *v, "a string");
  return std::get<std::string>(v->v);
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  TF_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (!v->is_int()) return wrong_type(*this, key, *v, "an integer");
  if (std::holds_alternative<uint64_t>(v->v)) {
    return make_error(ErrorCode::kInvalidArgument, "{}: metadata '{}' value {} does not fit int64",
                      name_, key, std::get<uint64_t>(v->v));
  }
  return std::get<int64_t>(v->v);
}

Result<double> GgufFile::get_float(std::string_view key) const {
  TF_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (v->is_float()) return std::get<double>(v->v);
  if (v->is_int()) {
    if (auto* u = std::get_if<uint64_t>(&v->v)) return static_cast<double>(*u);
    return static_cast<double>(std::get<int64_t>(v->v));
  }
  return wrong_type(*this, key, *v, "a number");
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  TF_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (v->type != GgufType::kBool) return wrong_type(*this, key, *v, "a bool");
  return std::get<bool>(v->v);
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  TF_ASSIGN_OR_RETURN(const GgufArray* a, lookup_array(*this, key));
  if (find(key)->elem_type != GgufType::kString) {
    return wrong_type(*this, key, *find(key), "an array of string");
  }
  std::vector<std::string> out;
  out.reserve(a->size());
  for (const auto& e : *a) out.push_back(std::get<std::string>(e.v));
  return out;
}

Result<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  TF_ASSIGN_OR_RETURN(const GgufArray* a, lookup_array(*this, key));
  GgufType et = find(key)->elem_type;
  if (et != GgufType::kF32 && et != GgufType::kF64) {
    return wrong_type(*this, key, *find(key), "an array of float");
  }
  std::vector<float> out;
  out.reserve(a->size());
  for (const auto& e : *a) out.push_back(static_cast<float>(std::get<double>(e.v)));
  return out;
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  TF_ASSIGN_OR_RETURN(const GgufArray* a, lookup_array(*this, key));
  GgufValue probe;
  probe.type = find(key)->elem_type;
  if (!probe.is_int()) return wrong_type(*this, key, *find(key), "an array of integer");
  std::vector<int64_t> out;
  out.reserve(a->size());
  for (const auto& e : *a) {
    if (std::holds_alternative<uint64_t>(e.v)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: metadata '{}' holds {} which does not fit int64", name_, key,
                        std::get<uint64_t>(e.v));
    }
    out.push_back(std::get<int64_t>(e.v));
  }
  return out;
}

}  // namespace tf::checkpoint
