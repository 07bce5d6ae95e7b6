// KvTiers implementation: a block's bytes, in RAM and on disk, are its layers in order, each
// layer's K rows then V rows, exactly as the pool holds them, so a restored block is bitwise the
// block that was computed.
#include "engine/kv_tiers.h"

#include <cstring>

namespace tf::engine {

Result<std::unique_ptr<KvTiers>> KvTiers::create(model::KvCache& kv, const BlockKey& model,
                                                 const KvTierOptions& options,
                                                 std::function<void()> on_load_done) {
  std::unique_ptr<KvTiers> t(new KvTiers(kv, options.host_bytes));
  if (!options.disk_dir.empty()) {
    KvFileLayout layout;
    layout.model = model;
    layout.block_size = static_cast<uint32_t>(kv.block_size());
    layout.layers = static_cast<uint32_t>(kv.num_layers());
    layout.row = static_cast<uint32_t>(kv.row_size());
    KvDiskOptions d;
    d.dir = options.disk_dir;
    d.budget_bytes = options.disk_bytes;
    d.free_floor_bytes = options.disk_free_floor_bytes;
    d.faults = options.disk_faults;
    auto disk = KvDiskTier::open(std::move(d), layout, std::move(on_load_done));
    if (!disk) return disk.error();
    t->disk_ = std::move(*disk);
    t->disk_budget_ = options.disk_bytes;
  }
  return t;
}

std::vector<float> KvTiers::copy_out(int32_t block) const {
  const size_t rows = static_cast<size_t>(kv_.block_size() * kv_.row_size());
  std::vector<float> data(2 * rows * kv_.num_layers());
  for (int l = 0; l < kv_.num_layers(); ++l) {
    std::memcpy(data.data() + 2 * l * rows, kv_.k(block, l), rows * sizeof(float));
    std::memcpy(data.data() + (2 * l + 1) * rows, kv_.v(block, l), rows * sizeof(float));
  }
  return data;
}

void KvTiers::spill(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
                    int32_t block) {
  if (host_.budget_bytes() <= 0) return;
  host_.put(key, parent, tokens, copy_out(block), false);
  ++spills_;
}

void KvTiers::committed(const BlockKey& key, const BlockKey& parent,
                        std::span<const int32_t> tokens, int32_t block) {
  if (disk_ && !disk_->contains(key)) disk_->write(key, parent, tokens, copy_out(block));
}

bool KvTiers::restore(const BlockKey& key, const BlockKey& parent, std::span<const int32_t> tokens,
                      int32_t block) {
  const KvHostTier::Entry* e = host_.get(key);
  const size_t rows = static_cast<size_t>(kv_.block_size() * kv_.row_size());
  if (e == nullptr || e->parent != parent ||
      !std::equal(tokens.begin(), tokens.end(), e->tokens.begin(), e->tokens.end()) ||
      e->data.size() != 2 * rows * kv_.num_layers()) {
    return false;
  }
  for (int l = 0; l < kv_.num_layers(); ++l) {
    std::memcpy(kv_.k(block, l), e->data.data() + 2 * l * rows, rows * sizeof(float));
    std::memcpy(kv_.v(block, l), e->data.data() + (2 * l + 1) * rows, rows * sizeof(float));
  }
  ++restores_;
  return true;
}

std::vector<BlockKey> KvTiers::stage(KvLoad& load) {
  std::vector<BlockKey> keys;
  for (KvLoad::Slot& s : load.slots) {
    if (!s.ok) break;  // the chain ends at its first bad block
    host_.put(s.key, s.parent, s.tokens, std::move(s.data), true);
    keys.push_back(s.key);
  }
  return keys;
}

void KvTiers::unpin(std::span<const BlockKey> keys) {
  for (const BlockKey& k : keys) host_.unpin(k);
}

void KvTiers::fill(CacheStats& s) const {
  s.host = {host_.blocks(), host_.bytes(), host_.budget_bytes()};
  s.spills = spills_;
  s.host_restores = restores_;
  if (!disk_) return;
  const KvDiskCounters c = disk_->counters();
  s.disk = {c.blocks, c.bytes, disk_budget_};
  s.disk_writes = c.writes;
  s.disk_write_seconds = c.write_seconds;
  s.disk_loads = c.loads;
  s.disk_load_seconds = c.load_seconds;
  s.read_failures = c.read_failures;
  s.write_failures = c.write_failures;
  s.writes_skipped = c.writes_skipped;
}

}  // namespace tf::engine
