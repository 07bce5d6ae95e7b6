// The disk tier's file format: one file per KV block, a header (magic, format version, model
// fingerprint, block size, dtype, geometry, the chain's keys and the block's token ids) with its
// own XXH3 checksum, then one chunk per layer (K rows, V rows), each followed by its checksum.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/kv_key.h"

namespace tf::engine {

inline constexpr char kKvFileMagic[8] = {'T', 'F', 'K', 'V', 'B', 'L', 'K', '1'};
inline constexpr uint32_t kKvFileVersion = 1;
inline constexpr size_t kKvHeaderReadBytes = 4096;  // enough for any header a scan reads

// The geometry a file must match to be read as KV of this model.
struct KvFileLayout {
  BlockKey model;  // ModelFingerprint::key()
  uint32_t block_size = 0, layers = 0, row = 0;  // row: kv_heads * head_dim elements
  uint32_t dtype = 0;                            // 0: f32, 1: bf16 (kv_dtype_code)

  size_t elem_bytes() const { return dtype == 1 ? 2 : 4; }
  size_t chunk_bytes() const { return size_t{2} * block_size * row * elem_bytes(); }  // a layer
  size_t data_bytes() const { return chunk_bytes() * layers; }
};

// The header's code for a pool dtype ("f32" 0, "bf16" 1); -1 for one the format does not know.
int kv_dtype_code(std::string_view dtype);

struct KvFileHeader {
  BlockKey key, parent;
  std::vector<int32_t> tokens;
  size_t header_bytes = 0;  // where the first chunk starts
};

// The whole file: header, then `data` (layer by layer: K rows then V rows) in checksummed chunks.
std::vector<uint8_t> encode_kv_file(const KvFileLayout& layout, const BlockKey& key,
                                    const BlockKey& parent, std::span<const int32_t> tokens,
                                    std::span<const uint8_t> data);
// The file's size for a header of `n_tokens` tokens.
size_t kv_file_bytes(const KvFileLayout& layout, size_t n_tokens);

enum class HeaderCheck { kOk, kOtherModel, kCorrupt };
// Parses the start of a file; kOtherModel for another model, format version or geometry (such
// files are left alone), kCorrupt for a damaged header or a key that does not match its chain.
HeaderCheck parse_kv_header(const KvFileLayout& layout, std::span<const uint8_t> bytes,
                            KvFileHeader* out);
// Where a read of a whole file of `n_tokens` tokens puts its bytes, so the data lands in place:
// the header in `header`, each layer's chunk in `data` (data_bytes()), its checksum in `sums`.
struct KvFileParts {
  std::vector<uint8_t> header;
  std::vector<uint64_t> sums;
  std::vector<iovec> iov;  // in file order; their lengths add up to kv_file_bytes()
};
KvFileParts kv_file_parts(const KvFileLayout& layout, size_t n_tokens, std::span<uint8_t> data);
// Whether every chunk read into `data` matches its checksum.
bool check_kv_chunks(const KvFileLayout& layout, const KvFileParts& parts,
                     std::span<const uint8_t> data);

}  // namespace tf::engine
