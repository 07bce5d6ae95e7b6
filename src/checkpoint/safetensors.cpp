// safetensors parser: u64 header length, JSON header, raw little-endian data. The header is
// untrusted: offsets are checked against the data section and against each other, and no
// nlohmann_json exception leaves this file.
#include "checkpoint/safetensors.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/json.h"
#include "checkpoint/utf8.h"

namespace tf::checkpoint {

namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the reference implementation's limit

struct StDType {
  std::string_view name;
  int bytes;
  std::optional<DType> dtype;
};
constexpr StDType kDTypes[] = {
    {"F32", 4, DType::kF32},   {"F16", 2, DType::kF16},      {"BF16", 2, DType::kBF16},
    {"I32", 4, DType::kI32},   {"F64", 8, std::nullopt},     {"I64", 8, std::nullopt},
    {"U64", 8, std::nullopt},  {"U32", 4, std::nullopt},     {"I16", 2, std::nullopt},
    {"U16", 2, std::nullopt},  {"I8", 1, std::nullopt},      {"U8", 1, std::nullopt},
    {"BOOL", 1, std::nullopt}, {"F8_E4M3", 1, std::nullopt}, {"F8_E5M2", 1, std::nullopt},
};

const StDType* find_dtype(std::string_view s) {
  for (const auto& d : kDTypes)
    if (d.name == s) return &d;
  return nullptr;
}

template <typename... Args>
Error corrupt(fmt::format_string<Args...> f, Args&&... args) {
  return make_error(ErrorCode::kCorrupt, f, std::forward<Args>(args)...);
}

}  // namespace

class SafetensorsParser {
 public:
  // Adds the tensors of one file (bytes kept alive by the caller or by `out.files_`).
  static Status parse_into(std::span<const uint8_t> b, SafetensorsFile& out) {
    try {
      return parse_impl(b, out);
    } catch (const std::exception& e) {  // nlohmann type/range errors on hostile headers
      return corrupt("invalid header: {}", e.what());
    }
  }

  // Resolves `__metadata__` aliases: a key that is not a tensor, whose value names one, is
  // the same tensor under another name (tied embeddings stored once).
  static void resolve_aliases(SafetensorsFile& out) {
    for (const auto& [k, v] : out.metadata_) {
      if (out.tensors_.count(k) || out.unsupported_.count(k)) continue;
      if (auto it = out.tensors_.find(v); it != out.tensors_.end()) {
        Tensor t = it->second;
        out.tensors_.emplace(k, std::move(t));
        out.aliases_.emplace(k, v);
      } else if (auto u = out.unsupported_.find(v); u != out.unsupported_.end()) {
        std::string d = u->second;
        out.unsupported_.emplace(k, std::move(d));
        out.aliases_.emplace(k, v);
      }
    }
  }

 private:
  static Status parse_impl(std::span<const uint8_t> b, SafetensorsFile& out) {
    if (b.size() < 8) return corrupt("truncated: {} bytes, need at least 8", b.size());
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = n << 8 | b[i];
    if (n > kMaxHeaderBytes)
      return corrupt("header length {} exceeds the {} limit", n, kMaxHeaderBytes);
    if (n > b.size() - 8) {
      return corrupt("header length {} extends past end of file (size {})", n, b.size());
    }
    std::string_view text(reinterpret_cast<const char*>(b.data() + 8), n);
    // Unordered json on purpose: a header names thousands of tensors, and ordered_json's linear
    // key map would make parsing quadratic. The depth bound comes first, as in base::parse_json.
    if (auto depth = base::check_json_depth(text); !depth.ok()) {
      return corrupt("header: {}", depth.error().message);
    }
    json h = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (h.is_discarded()) return corrupt("header is not valid JSON");
    if (!h.is_object()) return corrupt("header is not a JSON object");
    const uint8_t* data = b.data() + 8 + n;
    uint64_t data_size = b.size() - 8 - n;

    struct Extent {
      uint64_t begin, end;
      std::string name;
    };
    std::vector<Extent> extents;
    for (auto it = h.begin(); it != h.end(); ++it) {
      const std::string& name = it.key();
      if (!valid_utf8(name)) return corrupt("tensor name is not valid UTF-8");
      if (name == "__metadata__") {
        if (!it->is_object()) return corrupt("__metadata__ is not an object");
        for (auto m = it->begin(); m != it->end(); ++m) {
          if (!m->is_string()) return corrupt("__metadata__ '{}' is not a string", m.key());
          out.metadata_[m.key()] = m->get<std::string>();
        }
        continue;
      }
      const json& e = *it;
      if (!e.is_object()) return corrupt("tensor '{}' entry is not an object", name);
      if (out.tensors_.count(name) || out.unsupported_.count(name)) {
        return corrupt("duplicate tensor '{}'", name);
      }
      auto dt = e.find("dtype");
      auto sh = e.find("shape");
      auto off = e.find("data_offsets");
      if (dt == e.end() || !dt->is_string()) return corrupt("tensor '{}': missing dtype", name);
      if (sh == e.end() || !sh->is_array()) return corrupt("tensor '{}': missing shape", name);
      if (off == e.end() || !off->is_array() || off->size() != 2 ||
          !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned()) {
        return corrupt("tensor '{}': data_offsets must be two non-negative integers", name);
      }
      const StDType* d = find_dtype(dt->get<std::string>());
      if (!d) return corrupt("tensor '{}': unknown dtype '{}'", name, dt->get<std::string>());
      Tensor t;
      uint64_t numel = 1;
      for (const auto& x : *sh) {
        if (!x.is_number_unsigned()) return corrupt("tensor '{}': shape holds a non-integer", name);
        auto v = x.get<uint64_t>();
        if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
            (v != 0 && numel > (std::numeric_limits<uint64_t>::max() >> 4) / v)) {
          return corrupt("tensor '{}': element count overflows", name);
        }
        numel *= v;
        t.shape.push_back(static_cast<int64_t>(v));
      }
      if (t.shape.size() > 8) return corrupt("tensor '{}': {} dimensions", name, t.shape.size());
      auto begin = (*off)[0].get<uint64_t>(), end = (*off)[1].get<uint64_t>();
      if (begin > end || end > data_size) {
        return corrupt("tensor '{}': data_offsets [{}, {}] out of range (data section {} bytes)",
                       name, begin, end, data_size);
      }
      uint64_t want = numel * static_cast<uint64_t>(d->bytes);
      if (end - begin != want) {
        return corrupt("tensor '{}': data_offsets span {} bytes but {} {} elements need {}", name,
                       end - begin, numel, d->name, want);
      }
      extents.push_back({begin, end, name});
      if (!d->dtype) {
        out.unsupported_.emplace(name, std::string(d->name));
        continue;
      }
      t.dtype = *d->dtype;
      t.data = data + begin;
      out.tensors_.emplace(name, std::move(t));
    }
    std::sort(extents.begin(), extents.end(),
              [](const Extent& a, const Extent& b) { return a.begin < b.begin; });
    for (size_t i = 1; i < extents.size(); ++i) {
      if (extents[i].begin < extents[i - 1].end) {
        return corrupt("tensors '{}' and '{}' overlap", extents[i - 1].name, extents[i].name);
      }
    }
    return {};
  }
};

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::parse(std::span<const uint8_t> bytes,
                                                                std::string name) {
  auto f = std::make_shared<SafetensorsFile>();
  if (auto s = SafetensorsParser::parse_into(bytes, *f); !s.ok()) {
    return s.error().with_context(name);
  }
  SafetensorsParser::resolve_aliases(*f);
  return f;
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  TF_ASSIGN_OR_RETURN(MappedFile m, MappedFile::open(path));
  auto bytes = m.bytes();
  TF_ASSIGN_OR_RETURN(auto f, parse(bytes, path));
  f->files_.push_back(std::move(m));  // the mapping moves, its address does not
  return f;
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (!fs::exists(index, ec)) {
    fs::path single = fs::path(dir) / "model.safetensors";
    if (!fs::exists(single, ec)) {
      return make_error(ErrorCode::kNotFound,
                        "{}: neither model.safetensors.index.json nor model.safetensors found",
                        dir);
    }
    return open(single.string());
  }
  std::ifstream in(index);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in) return make_error(ErrorCode::kIo, "{}: cannot read", index.string());
  const std::string text = ss.str();
  if (auto depth = base::check_json_depth(text); !depth.ok()) {
    return depth.error().with_context(index.string());
  }
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return make_error(ErrorCode::kCorrupt, "{}: not a JSON object", index.string());
  }
  auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object() || wm->empty()) {
    return make_error(ErrorCode::kCorrupt, "{}: missing or empty weight_map", index.string());
  }
  std::set<std::string> shards;
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it->is_string()) {
      return make_error(ErrorCode::kCorrupt, "{}: weight_map '{}' is not a string", index.string(),
                        it.key());
    }
    std::string s = it->get<std::string>();
    // Shards live beside the index: a path that climbs out is refused.
    if (s.empty() || s.find('/') != std::string::npos || s == "." || s == "..") {
      return make_error(ErrorCode::kCorrupt, "{}: weight_map '{}' names bad shard '{}'",
                        index.string(), it.key(), s);
    }
    shards.insert(std::move(s));
  }
  auto f = std::make_shared<SafetensorsFile>();
  for (const auto& s : shards) {
    std::string p = (fs::path(dir) / s).string();
    TF_ASSIGN_OR_RETURN(MappedFile m, MappedFile::open(p));
    SafetensorsFile part;
    if (auto st = SafetensorsParser::parse_into(m.bytes(), part); !st.ok()) {
      return st.error().with_context(p);
    }
    for (auto& [k, t] : part.tensors_) {
      if (!f->tensors_.emplace(k, t).second) {
        return make_error(ErrorCode::kCorrupt, "{}: tensor '{}' appears in more than one shard", p,
                          k);
      }
    }
    for (auto& [k, d] : part.unsupported_) f->unsupported_.emplace(k, d);
    for (auto& [k, v] : part.metadata_) f->metadata_.emplace(k, v);
    f->files_.push_back(std::move(m));
  }
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!f->tensors_.count(it.key()) && !f->unsupported_.count(it.key())) {
      return make_error(ErrorCode::kCorrupt, "{}: tensor '{}' is not in shard '{}'", index.string(),
                        it.key(), it->get<std::string>());
    }
  }
  SafetensorsParser::resolve_aliases(*f);
  return f;
}

const Tensor* SafetensorsFile::find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Result<const Tensor*> SafetensorsFile::get(std::string_view name) const {
  if (const Tensor* t = find(name)) return t;
  if (auto u = unsupported_.find(name); u != unsupported_.end()) {
    return make_error(ErrorCode::kUnsupported, "tensor '{}' has unsupported dtype {}", name,
                      u->second);
  }
  return make_error(ErrorCode::kNotFound, "no tensor '{}'", name);
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size() + unsupported_.size());
  for (const auto& [k, t] : tensors_) out.push_back(k);
  for (const auto& [k, d] : unsupported_) out.push_back(k);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tf::checkpoint
