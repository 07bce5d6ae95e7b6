// libFuzzer target for the disk tier's block files: any bytes are refused or read as one block of
// a fixed small geometry, scattered into their parts as a read would, with every chunk checked.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "engine/kv_disk_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tf::engine;
  KvFileLayout layout;
  layout.model = BlockKey{0x1234, 0x5678};
  layout.block_size = 4;
  layout.layers = 2;
  layout.row = 8;
  layout.dtype = 1;
  const std::span<const uint8_t> bytes(data, size);
  KvFileHeader h;
  if (parse_kv_header(layout, bytes, &h) != HeaderCheck::kOk) return 0;
  std::vector<uint8_t> block(layout.data_bytes());
  KvFileParts parts = kv_file_parts(layout, h.tokens.size(), block);
  size_t total = 0;
  for (const iovec& v : parts.iov) total += v.iov_len;
  if (total != size) return 0;  // a read refuses a file of another size
  size_t at = 0;
  for (const iovec& v : parts.iov) {
    std::memcpy(v.iov_base, data + at, v.iov_len);
    at += v.iov_len;
  }
  (void)check_kv_chunks(layout, parts, block);
  return 0;
}
