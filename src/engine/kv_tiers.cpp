// KvTiers implementation: a block's bytes, in RAM and on disk, are the model's KvBlockTransfer
// layout (its layers in order, each layer's K rows then V rows, in the pool's dtype), so a
// restored block is bitwise the block that was computed.
#include "engine/kv_tiers.h"

#include <algorithm>
#include <chrono>

#include "base/log.h"

namespace tf::engine {

using Lane = model::KvBlockTransfer::Lane;

KvTiers::Staging::~Staging() {
  // A copy skipped by the disk tier may still be filling one; the arena frees them after.
  for (auto& [buffer, ticket] : free_) (void)transfer_.wait(ticket);
}

// Past what the arena has allocated ahead, a chunk is allocated at once (the first blocks after
// start-up would otherwise never reach the disk).
uint8_t* KvTiers::Staging::take() {
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.empty()) {
    std::vector<uint8_t*> got = arena_.collect();
    if (got.empty() && arena_.buffers() < max_) got = arena_.grow();
    for (auto it = got.rbegin(); it != got.rend(); ++it) free_.emplace_back(*it, 0);
  }
  if (free_.empty()) return nullptr;
  uint8_t* b = free_.back().first;
  free_.pop_back();
  return b;
}

void KvTiers::Staging::give(uint8_t* buffer, Ticket last_copy) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.emplace_back(buffer, last_copy);
}

KvTiers::KvTiers(const model::KvCache& kv, std::unique_ptr<model::KvBlockTransfer> transfer,
                 int64_t host_bytes)
    : transfer_(std::move(transfer)),
      out_(static_cast<size_t>(kv.num_blocks()), 0),
      host_(host_bytes, transfer_.get()) {}

KvTiers::~KvTiers() {
  disk_.reset();  // before the staging buffers its queued writes hold
}

Result<std::unique_ptr<KvTiers>> KvTiers::create(const model::KvCache& kv,
                                                 std::unique_ptr<model::KvBlockTransfer> transfer,
                                                 const BlockKey& model,
                                                 const KvTierOptions& options,
                                                 std::function<void()> on_load_done) {
  if (!transfer) {
    return make_error(ErrorCode::kUnsupported,
                      "this model offers no KV block copies for the prompt cache's tiers");
  }
  const int dtype = kv_dtype_code(transfer->dtype());
  if (dtype < 0) {
    return make_error(ErrorCode::kUnsupported, "the prompt cache's tiers do not store {} KV",
                      transfer->dtype());
  }
  std::unique_ptr<KvTiers> t(new KvTiers(kv, std::move(transfer), options.host_bytes));
  if (!options.disk_dir.empty()) {
    KvFileLayout layout;
    layout.model = model;
    layout.block_size = static_cast<uint32_t>(kv.block_size());
    layout.layers = static_cast<uint32_t>(kv.num_layers());
    layout.row = static_cast<uint32_t>(kv.row_size());
    layout.dtype = static_cast<uint32_t>(dtype);
    if (layout.data_bytes() != t->transfer_->block_bytes()) {
      return make_error(ErrorCode::kInternal, "the KV block transfer's block is {} bytes, not {}",
                        t->transfer_->block_bytes(), layout.data_bytes());
    }
    KvDiskOptions d;
    d.dir = options.disk_dir;
    d.budget_bytes = options.disk_bytes;
    d.free_floor_bytes = options.disk_free_floor_bytes;
    d.max_queued_bytes = options.disk_max_queued_bytes;
    d.faults = options.disk_faults;
    // One buffer per block the disk tier's backlog may hold, and one being written.
    t->staging_ = std::make_unique<Staging>(
        *t->transfer_, d.max_queued_bytes / static_cast<int64_t>(layout.data_bytes()) + 1);
    auto disk = KvDiskTier::open(std::move(d), layout, std::move(on_load_done));
    if (!disk) return disk.error();
    t->disk_ = std::move(*disk);
    t->disk_budget_ = options.disk_bytes;
  }
  return t;
}

void KvTiers::wait_out(int32_t block) {
  Ticket& t = out_[block];
  if (t != 0 && !transfer_->done(t)) (void)transfer_->wait(t);
  t = 0;
}

void KvTiers::copy_failed(const Error& e) {
  if (copy_failures_++ == 0) {
    TF_LOG_WARN("prompt cache: a block copy between the KV pool and host memory failed ({}); "
                "its request computes what it cannot resume",
                e.message);
  }
}

void KvTiers::spill(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
                    int32_t block) {
  const auto t0 = std::chrono::steady_clock::now();
  wait_out(block);
  // Still waiting for the disk: its last chance, on the lane the block's next write waits for.
  if (behind_keys_.erase(key) != 0) {
    (void)write_block(key, parent, tokens, block, Lane::kStep);
    behind_count_ = static_cast<int64_t>(behind_keys_.size());
  }
  KvHostTier::Entry* e = host_.insert(key, parent, tokens, false);
  if (e == nullptr) return;
  auto t = transfer_->to_host(block, e->data, Lane::kStep);
  if (!t) {
    copy_failed(t.error());
    host_.erase(key);
    return;
  }
  e->ticket = *t;
  ++spills_;
  spill_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void KvTiers::committed(const BlockKey& key, const BlockKey& parent,
                        std::span<const int32_t> tokens, int32_t block) {
  if (!disk_ || disk_->holds(key) || behind_keys_.count(key) != 0) return;
  if (behind_.empty() && write_block(key, parent, tokens, block, Lane::kBackground)) return;
  constexpr size_t kMaxBehind = size_t{1} << 16;
  if (behind_.size() >= kMaxBehind) {  // far behind: the oldest waiting block goes unwritten
    behind_keys_.erase(behind_.front().key);
    behind_.pop_front();
    ++staging_skipped_;
  }
  behind_.push_back({key, parent, {tokens.begin(), tokens.end()}});
  behind_keys_.insert(key);
  behind_count_ = static_cast<int64_t>(behind_keys_.size());
}

void KvTiers::catch_up(const std::function<int32_t(const BlockKey&)>& where) {
  while (!behind_.empty()) {
    const Behind& b = behind_.front();
    if (behind_keys_.count(b.key) != 0) {
      const int32_t block = where(b.key);
      if (block >= 0 && !write_block(b.key, b.parent, b.tokens, block, Lane::kBackground)) return;
      behind_keys_.erase(b.key);
    }
    behind_.pop_front();
    behind_count_ = static_cast<int64_t>(behind_keys_.size());
  }
}

bool KvTiers::write_block(const BlockKey& key, const BlockKey& parent,
                          std::span<const int32_t> tokens, int32_t block, Lane lane) {
  if (!disk_->wants(key)) return disk_->holds(key);
  uint8_t* buffer = staging_->take();
  if (buffer == nullptr) return false;
  auto t = transfer_->to_host(block, buffer, lane);
  if (!t) {
    copy_failed(t.error());
    staging_->give(buffer, 0);
    return true;  // not retried
  }
  if (lane == Lane::kBackground) out_[block] = *t;
  auto bytes = std::make_unique<KvBlockBytes>();
  bytes->bytes = {buffer, transfer_->block_bytes()};
  bytes->ready = [tr = transfer_.get(), ticket = *t] { return tr->wait(ticket).ok(); };
  bytes->release = [s = staging_.get(), buffer, ticket = *t] { s->give(buffer, ticket); };
  disk_->write(key, parent, tokens, std::move(bytes));
  return true;
}

bool KvTiers::restore(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
                      int32_t block) {
  KvHostTier::Entry* e = host_.get(key);
  if (e == nullptr || e->parent != parent ||
      !std::equal(tokens.begin(), tokens.end(), e->tokens.begin(), e->tokens.end())) {
    return false;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto t = transfer_->to_pool(e->data, block);
  if (!t) {
    copy_failed(t.error());
    return false;
  }
  e->ticket = *t;
  ++restores_;
  restore_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return true;
}

std::shared_ptr<KvLoad> KvTiers::load(std::vector<KvLoad::Slot> slots) {
  reap();
  size_t n = 0;
  for (; n < slots.size(); ++n) {
    uint8_t* data = nullptr;
    Ticket last = 0;
    if (!host_.take_buffer(&data, &last)) break;
    slots[n].data = {data, transfer_->block_bytes()};
    // The slot's last copy (a restore reading it, a spill filling it) ends before the read.
    slots[n].ready = [tr = transfer_.get(), last] { return tr->wait(last).ok(); };
  }
  if (n < slots.size() && !load_short_warned_) {
    load_short_warned_ = true;
    TF_LOG_WARN("prompt cache: a disk load of {} blocks stops at {}: no host memory for the rest",
                slots.size(), n);
  }
  slots.resize(n);
  if (slots.empty()) return nullptr;
  return disk_->load(std::move(slots));
}

std::vector<BlockKey> KvTiers::stage(KvLoad& load) {
  std::vector<BlockKey> keys;
  size_t i = 0;
  for (; i < load.slots.size() && load.slots[i].ok; ++i) {  // the chain ends at a failed read
    KvLoad::Slot& s = load.slots[i];
    host_.adopt(s.key, s.parent, s.tokens, s.data.data());
    s.data = {};
    keys.push_back(s.key);
  }
  give_back(load, i);
  reap();
  return keys;
}

void KvTiers::give_back(KvLoad& load, size_t first) {
  for (size_t i = first; i < load.slots.size(); ++i) {
    if (!load.slots[i].data.empty()) host_.give_buffer(load.slots[i].data.data());
    load.slots[i].data = {};
  }
}

void KvTiers::abandon(std::shared_ptr<KvLoad> load) {
  abandoned_.push_back(std::move(load));
  reap();
}

void KvTiers::reap() {
  std::erase_if(abandoned_, [&](const std::shared_ptr<KvLoad>& l) {
    if (!l->done()) return false;
    give_back(*l, 0);
    return true;
  });
}

void KvTiers::unpin(std::span<const BlockKey> keys) {
  for (const BlockKey& k : keys) host_.unpin(k);
}

void KvTiers::fill(CacheStats& s) const {
  s.host = {host_.blocks(), host_.bytes(), host_.budget_bytes()};
  s.spills = spills_;
  s.host_restores = restores_;
  s.spill_seconds = spill_seconds_;
  s.restore_seconds = restore_seconds_;
  s.copy_failures = copy_failures_;
  s.warnings = copy_failures_ > 0 ? 1 : 0;
  if (!disk_) return;
  const KvDiskCounters c = disk_->counters();
  s.disk = {c.blocks, c.bytes, disk_budget_, c.paused};
  s.warnings += c.warnings;
  s.disk_writes = c.writes;
  s.disk_write_seconds = c.write_seconds;
  s.disk_loads = c.loads;
  s.disk_load_seconds = c.load_seconds;
  s.read_failures = c.read_failures;
  s.write_failures = c.write_failures;
  s.writes_skipped = c.writes_skipped + staging_skipped_;
}

}  // namespace tf::engine
