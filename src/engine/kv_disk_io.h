// The disk tier's I/O layer: whole-file writes (io_uring through liburing where the kernel
// allows it, plain write(2) otherwise) and reads, behind an interface so tests can inject faults
// (failed writes such as ENOSPC, truncated writes, flipped bits and slow reads).
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tf::engine {

class KvFileIo {
 public:
  virtual ~KvFileIo() = default;
  // Creates `path` (mode 0600, never through a symlink) holding `bytes`; 0 or an errno.
  virtual int write_file(const std::string& path, std::span<const uint8_t> bytes) = 0;
  // The first `max` bytes of `path` (all of it when it is shorter); 0 or an errno.
  virtual int read_file(const std::string& path, size_t max, std::vector<uint8_t>* out) = 0;
  // The whole of `path` scattered into `parts` (one preadv); 0, an errno, or kKvFileSize when
  // the file is not exactly as long as the parts. Any number of threads may read at once.
  virtual int read_parts(const std::string& path, std::span<const iovec> parts) = 0;
  virtual const char* name() const = 0;
};

inline constexpr int kKvFileSize = -1;  // read_parts: the file has another size (damaged)

// io_uring when a ring can be set up here, else plain system calls. One thread writes at a time.
std::unique_ptr<KvFileIo> make_file_io();
std::unique_ptr<KvFileIo> make_plain_file_io();

// Faults a test turns on while the tier runs (shared with the FaultyFileIo that obeys them).
struct KvFaults {
  std::atomic<int> write_errno{0};           // every write fails with this errno (e.g. ENOSPC)
  std::atomic<bool> truncate_writes{false};  // files are written short, as a crash would leave
  std::atomic<bool> flip_read_bit{false};    // one bit of each block read is flipped
  std::atomic<bool> hold_reads{false};       // block reads wait while this is set
  std::atomic<int> read_errno{0};            // every block read fails with this errno
};

class FaultyFileIo final : public KvFileIo {
 public:
  FaultyFileIo(std::unique_ptr<KvFileIo> inner, std::shared_ptr<KvFaults> faults)
      : inner_(std::move(inner)), faults_(std::move(faults)) {}
  int write_file(const std::string& path, std::span<const uint8_t> bytes) override;
  int read_file(const std::string& path, size_t max, std::vector<uint8_t>* out) override;
  int read_parts(const std::string& path, std::span<const iovec> parts) override;
  const char* name() const override { return "faulty"; }

 private:
  std::unique_ptr<KvFileIo> inner_;
  std::shared_ptr<KvFaults> faults_;
};

}  // namespace tf::engine
