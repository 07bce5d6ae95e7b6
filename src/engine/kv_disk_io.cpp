// File I/O for the disk tier. Writes go through io_uring when liburing is built in and the
// kernel (or a sandbox's seccomp policy) allows a ring; otherwise through write(2).
#include "engine/kv_disk_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#if __has_include(<liburing.h>)
#include <liburing.h>
#define TF_KV_URING 1
#endif

namespace tf::engine {
namespace {

int open_new(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
}

class PlainFileIo : public KvFileIo {
 public:
  int write_file(const std::string& path, std::span<const uint8_t> bytes) override {
    const int fd = open_new(path);
    if (fd < 0) return errno;
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int e = n < 0 ? errno : EIO;
        ::close(fd);
        return e;
      }
      done += static_cast<size_t>(n);
    }
    return ::close(fd) == 0 ? 0 : errno;
  }

  int read_file(const std::string& path, size_t max, std::vector<uint8_t>* out) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno;
    if (max == SIZE_MAX) {
      const off_t end = ::lseek(fd, 0, SEEK_END);
      max = end > 0 ? static_cast<size_t>(end) : 0;
    }
    out->resize(max);
    size_t done = 0;
    while (done < max) {
      const ssize_t n = ::pread(fd, out->data() + done, max - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int e = errno;
        ::close(fd);
        return e;
      }
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    out->resize(done);
    ::close(fd);
    return 0;
  }

  int read_parts(const std::string& path, std::span<const iovec> parts) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno;
    size_t total = 0;
    for (const iovec& v : parts) total += v.iov_len;
    struct stat st {};
    int err = ::fstat(fd, &st) != 0 ? errno : 0;
    if (err == 0 && static_cast<size_t>(st.st_size) != total) err = kKvFileSize;
    std::vector<iovec> left(parts.begin(), parts.end());
    size_t first = 0, done = 0;
    while (err == 0 && done < total) {
      const ssize_t n = ::preadv(fd, left.data() + first, static_cast<int>(left.size() - first),
                                 static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        err = n < 0 ? errno : kKvFileSize;  // shortened while being read
        break;
      }
      done += static_cast<size_t>(n);
      for (size_t k = static_cast<size_t>(n); k > 0 && first < left.size();) {
        const size_t step = std::min(k, left[first].iov_len);
        left[first].iov_base = static_cast<uint8_t*>(left[first].iov_base) + step;
        left[first].iov_len -= step;
        k -= step;
        if (left[first].iov_len == 0) ++first;
      }
    }
    ::close(fd);
    return err;
  }
  const char* name() const override { return "write(2)"; }
};

#ifdef TF_KV_URING
// Writes through a ring: each write is one submission, completed before the next (the writer
// thread is the only user), so a slow disk delays the writer but never the engine thread.
class UringFileIo final : public PlainFileIo {
 public:
  static std::unique_ptr<UringFileIo> create() {
    auto io = std::unique_ptr<UringFileIo>(new UringFileIo());
    if (io_uring_queue_init(8, &io->ring_, 0) != 0) return nullptr;
    io->ready_ = true;
    return io;
  }
  ~UringFileIo() override {
    if (ready_) io_uring_queue_exit(&ring_);
  }
  int write_file(const std::string& path, std::span<const uint8_t> bytes) override {
    const int fd = open_new(path);
    if (fd < 0) return errno;
    size_t done = 0;
    int err = 0;
    while (done < bytes.size() && err == 0) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      io_uring_prep_write(sqe, fd, bytes.data() + done, static_cast<unsigned>(bytes.size() - done),
                          done);
      io_uring_submit(&ring_);
      io_uring_cqe* cqe = nullptr;
      if (int r = io_uring_wait_cqe(&ring_, &cqe); r < 0) {
        err = -r;
        break;
      }
      const int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      if (res == -EINTR || res == -EAGAIN) continue;
      if (res <= 0)
        err = res < 0 ? -res : EIO;
      else
        done += static_cast<size_t>(res);
    }
    if (::close(fd) != 0 && err == 0) err = errno;
    return err;
  }
  const char* name() const override { return "io_uring"; }

 private:
  UringFileIo() = default;
  io_uring ring_{};
  bool ready_ = false;
};
#endif

}  // namespace

std::unique_ptr<KvFileIo> make_plain_file_io() { return std::make_unique<PlainFileIo>(); }

std::unique_ptr<KvFileIo> make_file_io() {
#ifdef TF_KV_URING
  if (auto io = UringFileIo::create()) return io;
#endif
  return make_plain_file_io();
}

int FaultyFileIo::write_file(const std::string& path, std::span<const uint8_t> bytes) {
  if (int e = faults_->write_errno.load()) return e;
  if (faults_->truncate_writes) return inner_->write_file(path, bytes.first(bytes.size() / 2));
  return inner_->write_file(path, bytes);
}

int FaultyFileIo::read_file(const std::string& path, size_t max, std::vector<uint8_t>* out) {
  return inner_->read_file(path, max, out);
}

int FaultyFileIo::read_parts(const std::string& path, std::span<const iovec> parts) {
  while (faults_->hold_reads.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (int e = faults_->read_errno.load()) return e;
  const int r = inner_->read_parts(path, parts);
  if (r == 0 && faults_->flip_read_bit) {  // in the last chunk: 20 bytes before the file's end
    size_t back = 19;
    for (auto v = parts.rbegin(); v != parts.rend(); ++v) {
      if (back < v->iov_len) {
        static_cast<uint8_t*>(v->iov_base)[v->iov_len - 1 - back] ^= 4;
        break;
      }
      back -= v->iov_len;
    }
  }
  return r;
}

}  // namespace tf::engine
