// KvDiskTier implementation. The index (files_, lru_) is shared by the engine thread, which asks
// what is held, and the I/O threads: the writer adds written files and drops surplus ones, the
// readers drop bad ones. Several readers keep a long prefix's reads (thousands of files, each
// checked) from queueing behind one another.
#include "engine/kv_disk_tier.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "base/log.h"

namespace tf::engine {
namespace {

constexpr std::string_view kSuffix = ".kv";
constexpr int kReaders = 4;
constexpr std::string_view kTmpSuffix = ".tmp";

bool ends_with(std::string_view s, std::string_view t) {
  return s.size() >= t.size() && s.substr(s.size() - t.size()) == t;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

Status check_dir(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || ::chmod(dir.c_str(), 0700) != 0 || ::lstat(dir.c_str(), &st) != 0) {
      return make_error(ErrorCode::kInvalidArgument, "cannot create the prompt cache dir {}: {}",
                        dir, ec ? ec.message() : std::strerror(errno));
    }
  }
  if (S_ISLNK(st.st_mode)) {
    return make_error(ErrorCode::kInvalidArgument, "the prompt cache dir {} is a symlink", dir);
  }
  if (!S_ISDIR(st.st_mode)) {
    return make_error(ErrorCode::kInvalidArgument, "the prompt cache dir {} is not a directory",
                      dir);
  }
  if (st.st_mode & S_IWOTH) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the prompt cache dir {} is writable by others; use a private one (0700)",
                      dir);
  }
  if (st.st_uid == ::geteuid() && (st.st_mode & 077) != 0) ::chmod(dir.c_str(), 0700);
  return {};
}

}  // namespace

Result<std::unique_ptr<KvDiskTier>> KvDiskTier::open(KvDiskOptions options, KvFileLayout layout,
                                                     std::function<void()> on_load_done) {
  TF_RETURN_IF_ERROR(check_dir(options.dir));
  std::unique_ptr<KvDiskTier> t(
      new KvDiskTier(std::move(options), layout, std::move(on_load_done)));
  t->scan();
  t->writer_ = std::thread([p = t.get()] { p->write_loop(); });
  for (int i = 0; i < kReaders; ++i) t->readers_.emplace_back([p = t.get()] { p->read_loop(); });
  return t;
}

KvDiskTier::KvDiskTier(KvDiskOptions options, KvFileLayout layout,
                       std::function<void()> on_load_done)
    : opt_(std::move(options)), layout_(layout), on_load_done_(std::move(on_load_done)) {
  io_ = make_file_io();
  io_name_ = io_->name();
  if (opt_.faults) io_ = std::make_unique<FaultyFileIo>(std::move(io_), opt_.faults);
}

KvDiskTier::~KvDiskTier() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& r : readers_) r.join();
  if (writer_.joinable()) writer_.join();
}

std::string KvDiskTier::path_of(const BlockKey& key) const {
  return opt_.dir + "/" + key.hex() + std::string(kSuffix);
}

// Reads only each file's header: start-up costs one small read per file, however large the tier.
void KvDiskTier::scan() {
  struct Found {
    BlockKey key;
    int64_t bytes;
    int64_t mtime_ns;
  };
  std::vector<Found> found;
  DIR* d = ::opendir(opt_.dir.c_str());
  if (d == nullptr) return;
  std::vector<uint8_t> head;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const std::string path = opt_.dir + "/" + name;
    if (ends_with(name, kTmpSuffix)) {  // a write that never finished
      ::unlink(path.c_str());
      continue;
    }
    if (!ends_with(name, kSuffix)) continue;
    struct stat st {};
    KvFileHeader h;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        io_->read_file(path, kKvHeaderReadBytes, &head) != 0) {
      ++counters_.ignored_files;
      continue;
    }
    const HeaderCheck c = parse_kv_header(layout_, head, &h);
    if (c == HeaderCheck::kOk && path_of(h.key) == path &&
        static_cast<size_t>(st.st_size) == kv_file_bytes(layout_, h.tokens.size())) {
      found.push_back({h.key, st.st_size, st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec});
      continue;
    }
    ++counters_.ignored_files;
    if (c != HeaderCheck::kOtherModel) ::unlink(path.c_str());  // ours, but damaged
  }
  ::closedir(d);
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.mtime_ns < b.mtime_ns; });
  std::lock_guard<std::mutex> lock(mu_);
  for (const Found& f : found) add_file_locked(f.key, f.bytes);
}

void KvDiskTier::add_file_locked(const BlockKey& key, int64_t bytes) {
  auto [it, fresh] = files_.try_emplace(key);
  if (!fresh) {
    counters_.bytes -= it->second.bytes;
    lru_.erase(it->second.lru);
  }
  it->second.bytes = bytes;
  it->second.lru = lru_.insert(lru_.end(), key);
  counters_.bytes += bytes;
  while (counters_.bytes > opt_.budget_bytes && !lru_.empty()) {
    const BlockKey victim = lru_.front();
    ::unlink(path_of(victim).c_str());
    drop_file_locked(victim);
  }
  counters_.blocks = static_cast<int64_t>(files_.size());
}

void KvDiskTier::drop_file_locked(const BlockKey& key) {
  auto it = files_.find(key);
  if (it == files_.end()) return;
  counters_.bytes -= it->second.bytes;
  lru_.erase(it->second.lru);
  files_.erase(it);
  counters_.blocks = static_cast<int64_t>(files_.size());
}

bool KvDiskTier::contains(const BlockKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return files_.count(key) != 0;
}

bool KvDiskTier::wants(const BlockKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return !files_.count(key) && !queued_.count(key) &&
         queued_bytes_ + static_cast<int64_t>(layout_.data_bytes()) <= opt_.max_queued_bytes;
}

bool KvDiskTier::holds(const BlockKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return files_.count(key) || queued_.count(key);
}

void KvDiskTier::write(const BlockKey& key, const BlockKey& parent,
                       std::span<const int32_t> tokens, std::unique_ptr<KvBlockBytes> data) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (files_.count(key) || queued_.count(key)) return;
    const int64_t bytes = static_cast<int64_t>(data->bytes.size());
    if (queued_bytes_ + bytes > opt_.max_queued_bytes) {  // behind: the pool or RAM still holds it
      ++counters_.writes_skipped;
      return;
    }
    queued_bytes_ += bytes;
    queued_.insert(key);
    writes_.push_back({key, parent, {tokens.begin(), tokens.end()}, std::move(data)});
  }
  cv_.notify_all();
}

std::shared_ptr<KvLoad> KvDiskTier::load(std::vector<KvLoad::Slot> slots) {
  auto l = std::make_shared<KvLoad>();
  l->slots = std::move(slots);
  l->remaining.store(static_cast<int>(l->slots.size()), std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < l->slots.size(); ++i) {
      // Most recently used now, so that the writer's evictions take other files first.
      if (auto it = files_.find(l->slots[i].key); it != files_.end()) {
        lru_.splice(lru_.end(), lru_, it->second.lru);
      }
      reads_.push_back({l, i});
    }
  }
  cv_.notify_all();
  return l;
}

void KvDiskTier::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return idle_locked(); });
}

bool KvDiskTier::flush_for(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, std::chrono::duration<double>(seconds),
                           [&] { return idle_locked(); });
}

KvDiskCounters KvDiskTier::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

// Called with mu_ held.
void KvDiskTier::warn_once(std::atomic<bool>& flag, const std::string& message) {
  if (flag.exchange(true)) return;
  TF_LOG_WARN("prompt cache: {}", message);
  ++counters_.warnings;
}

// At stop, queued writes still finish (a restart finds them), and then the reads still queued
// (the readers stop first) end not ok.
void KvDiskTier::write_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !writes_.empty(); });
    if (writes_.empty()) break;  // stopping
    Write w = std::move(writes_.front());
    writes_.pop_front();
    ++busy_;
    lock.unlock();
    do_write(w);
    lock.lock();
    queued_.erase(w.key);
    queued_bytes_ -= static_cast<int64_t>(w.data->bytes.size());
    w.data.reset();  // its buffer goes back (outside the I/O, under the lock: cheap)
    --busy_;
    if (idle_locked()) idle_cv_.notify_all();
  }
  for (Read& r : reads_) end_read(r);
  reads_.clear();
  idle_cv_.notify_all();
}

void KvDiskTier::read_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !reads_.empty(); });
    if (stop_) return;
    Read r = std::move(reads_.front());
    reads_.pop_front();
    ++busy_;
    lock.unlock();
    do_read(r);
    lock.lock();
    --busy_;
    if (idle_locked()) idle_cv_.notify_all();
  }
}

void KvDiskTier::do_write(Write& w) {
  struct statvfs vfs {};
  if (::statvfs(opt_.dir.c_str(), &vfs) == 0 &&
      static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize) <
          opt_.free_floor_bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    warn_once(warned_floor_, "the disk is below its free-space floor; writes pause");
    ++counters_.writes_skipped;
    counters_.paused = true;
    return;
  }
  if ((w.data->ready && !w.data->ready()) || w.data->bytes.size() != layout_.data_bytes()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.write_failures;
    warn_once(warned_write_, "a block's copy out of the KV pool failed; it is not written");
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();  // after the copy out of the pool ended
  const std::vector<uint8_t> bytes =
      encode_kv_file(layout_, w.key, w.parent, w.tokens, w.data->bytes);
  const std::string path = path_of(w.key);
  const std::string tmp = path + std::string(kTmpSuffix);
  int err = io_->write_file(tmp, bytes);
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  std::lock_guard<std::mutex> lock(mu_);
  if (err != 0) {
    ::unlink(tmp.c_str());
    ++counters_.write_failures;
    counters_.paused = true;
    warn_once(warned_write_, fmt::format("a write to {} failed ({}); serving from RAM",
                                         opt_.dir, std::strerror(err)));
    return;
  }
  ++counters_.writes;
  counters_.paused = false;
  counters_.write_seconds += seconds_since(t0);
  add_file_locked(w.key, static_cast<int64_t>(bytes.size()));
}

void KvDiskTier::do_read(Read& r) {
  KvLoad::Slot& slot = r.load->slots[r.slot];
  const auto t0 = std::chrono::steady_clock::now();
  const std::string path = path_of(slot.key);
  int err = 0;
  bool ok = false;
  // A buffer that cannot be written (its last copy failed) ends the slot; the file is fine.
  const bool writable = slot.data.size() == layout_.data_bytes() && (!slot.ready || slot.ready());
  if (writable) {
    KvFileParts parts = kv_file_parts(layout_, slot.tokens.size(), slot.data);
    err = io_->read_parts(path, parts.iov);
    KvFileHeader h;
    ok = err == 0 && parse_kv_header(layout_, parts.header, &h) == HeaderCheck::kOk &&
         h.key == slot.key && h.parent == slot.parent && h.tokens == slot.tokens &&
         check_kv_chunks(layout_, parts, slot.data);
  }
  if (writable) {
    std::lock_guard<std::mutex> lock(mu_);
    if (ok) {
      ++counters_.loads;
      counters_.load_seconds += seconds_since(t0);
    } else {
      ++counters_.read_failures;
      warn_once(warned_read_,
                fmt::format("a cached block in {} could not be read ({}); it is dropped and its "
                            "request resumes from what is held above",
                            opt_.dir, err > 0 ? std::strerror(err) : "damaged file"));
      ::unlink(path.c_str());
      drop_file_locked(slot.key);
    }
  }
  slot.ok = ok;
  end_read(r);
}

void KvDiskTier::end_read(Read& r) {
  if (r.load->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1 && on_load_done_) {
    on_load_done_();
  }
}

}  // namespace tf::engine
