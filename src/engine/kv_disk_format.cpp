// KV block files: little-endian fields written in a fixed order; every check a reader needs
// before trusting a byte is here, so the tier never reads another model's file as KV.
#include "engine/kv_disk_format.h"

#include <cstring>

namespace tf::engine {
namespace {

// Appends into a buffer sized up front (no reallocation while writing).
class Writer {
 public:
  Writer(std::vector<uint8_t>& out, size_t capacity) : out_(out) { out_.resize(capacity); }
  template <typename T>
  void put(const T& v) {
    put_bytes(&v, sizeof(T));
  }
  void put_bytes(const void* p, size_t n) {
    if (n == 0 || pos_ + n > out_.size()) return;
    std::memcpy(out_.data() + pos_, p, n);
    pos_ += n;
  }
  size_t pos() const { return pos_; }

 private:
  std::vector<uint8_t>& out_;
  size_t pos_ = 0;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  template <typename T>
  bool get(T* v) {
    if (pos_ + sizeof(T) > in_.size()) return false;
    std::memcpy(v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  size_t pos() const { return pos_; }

 private:
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

void put_key(Writer& w, const BlockKey& k) {
  w.put(k.lo);
  w.put(k.hi);
}
bool get_key(Reader& r, BlockKey* k) { return r.get(&k->lo) && r.get(&k->hi); }

size_t header_bytes(size_t n_tokens) {
  return sizeof kKvFileMagic + 4 * 2 + 16 + 4 * 4 + 16 * 2 + 4 + 4 * n_tokens + 8;
}

}  // namespace

int kv_dtype_code(std::string_view dtype) {
  if (dtype == "f32") return 0;
  if (dtype == "bf16") return 1;
  return -1;
}

size_t kv_file_bytes(const KvFileLayout& layout, size_t n_tokens) {
  return header_bytes(n_tokens) + layout.layers * (layout.chunk_bytes() + 8);
}

std::vector<uint8_t> encode_kv_file(const KvFileLayout& layout, const BlockKey& key,
                                    const BlockKey& parent, std::span<const int32_t> tokens,
                                    std::span<const uint8_t> data) {
  std::vector<uint8_t> out;
  Writer w(out, kv_file_bytes(layout, tokens.size()));
  w.put_bytes(kKvFileMagic, sizeof kKvFileMagic);
  w.put(kKvFileVersion);
  w.put(static_cast<uint32_t>(header_bytes(tokens.size())));
  put_key(w, layout.model);
  for (uint32_t v : {layout.block_size, layout.dtype, layout.layers, layout.row}) w.put(v);
  put_key(w, key);
  put_key(w, parent);
  w.put(static_cast<uint32_t>(tokens.size()));
  w.put_bytes(tokens.data(), tokens.size_bytes());
  w.put(checksum64(out.data(), w.pos()));
  const size_t chunk = layout.chunk_bytes();
  for (uint32_t l = 0; l < layout.layers; ++l) {
    const uint8_t* c = data.data() + l * chunk;
    w.put_bytes(c, chunk);
    w.put(checksum64(c, chunk));
  }
  return out;
}

HeaderCheck parse_kv_header(const KvFileLayout& layout, std::span<const uint8_t> bytes,
                            KvFileHeader* out) {
  if (bytes.size() < sizeof kKvFileMagic ||
      std::memcmp(bytes.data(), kKvFileMagic, sizeof kKvFileMagic) != 0) {
    return HeaderCheck::kOtherModel;  // not one of ours at all
  }
  Reader r(bytes.subspan(sizeof kKvFileMagic));
  uint32_t version = 0, hbytes = 0, bs = 0, dtype = 0, layers = 0, row = 0, n = 0;
  BlockKey model;
  if (!r.get(&version)) return HeaderCheck::kCorrupt;
  if (version != kKvFileVersion) return HeaderCheck::kOtherModel;
  if (!r.get(&hbytes) || !get_key(r, &model) || !r.get(&bs) || !r.get(&dtype) ||
      !r.get(&layers) || !r.get(&row)) {
    return HeaderCheck::kCorrupt;
  }
  if (model != layout.model || bs != layout.block_size || dtype != layout.dtype ||
      layers != layout.layers || row != layout.row) {
    return HeaderCheck::kOtherModel;
  }
  if (!get_key(r, &out->key) || !get_key(r, &out->parent) || !r.get(&n) || n > bs ||
      hbytes != header_bytes(n) || hbytes > bytes.size()) {
    return HeaderCheck::kCorrupt;
  }
  out->tokens.resize(n);
  for (auto& t : out->tokens) r.get(&t);
  uint64_t sum = 0;
  const size_t summed = sizeof kKvFileMagic + r.pos();
  if (!r.get(&sum) || sum != checksum64(bytes.data(), summed)) return HeaderCheck::kCorrupt;
  if (child_key(out->parent, out->tokens) != out->key) return HeaderCheck::kCorrupt;
  out->header_bytes = hbytes;
  return HeaderCheck::kOk;
}

KvFileParts kv_file_parts(const KvFileLayout& layout, size_t n_tokens, std::span<uint8_t> data) {
  KvFileParts p;
  p.header.resize(header_bytes(n_tokens));
  p.sums.resize(layout.layers);
  p.iov.reserve(1 + 2 * size_t{layout.layers});
  p.iov.push_back({p.header.data(), p.header.size()});
  const size_t chunk = layout.chunk_bytes();
  for (uint32_t l = 0; l < layout.layers; ++l) {
    p.iov.push_back({data.data() + l * chunk, chunk});
    p.iov.push_back({&p.sums[l], sizeof(uint64_t)});
  }
  return p;
}

bool check_kv_chunks(const KvFileLayout& layout, const KvFileParts& parts,
                     std::span<const uint8_t> data) {
  const size_t chunk = layout.chunk_bytes();
  if (data.size() != layout.data_bytes() || parts.sums.size() != layout.layers) return false;
  for (uint32_t l = 0; l < layout.layers; ++l) {
    if (parts.sums[l] != checksum64(data.data() + l * chunk, chunk)) return false;
  }
  return true;
}

}  // namespace tf::engine
