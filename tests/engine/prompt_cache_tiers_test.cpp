// The prompt cache's tiers on a real model: a prompt resumed from host RAM, from disk and after a
// restart replies bit-identically to a fresh run, and disk blocks serve only the model and
// arithmetic that wrote them; disk faults (truncated, corrupt, deleted and unreadable files,
// failing writes, slow reads) cost nothing but the blocks they hit.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "backend/cpu/ops.h"
#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "engine/kv_disk_tier.h"
#include "engine/kv_host_tier.h"
#include "support/engine_reply.h"
#include "support/paths.h"
#include "support/stories_model.h"

namespace tf::engine {
namespace {

namespace fs = std::filesystem;

KvDiskOptions disk_options(const fs::path& dir) {
  KvDiskOptions o;
  o.dir = dir.string();
  o.budget_bytes = int64_t{1} << 30;
  o.free_floor_bytes = 0;
  return o;
}

using test::collect;
using test::Reply;

bool same(const Reply& a, const Reply& b) {
  return a.ids == b.ids && a.logprobs.size() == b.logprobs.size() &&
         std::memcmp(a.logprobs.data(), b.logprobs.data(), a.logprobs.size() * sizeof(float)) == 0;
}

Request make_request(RequestId id, int len, int max_tokens, int salt = 0) {
  Request r;
  r.id = id;
  r.prompt.push_back(1);
  for (int i = 1; i < len; ++i) r.prompt.push_back(3 + (salt * 131 + i * 17 + id * 7) % 400);
  r.sampling.temperature = 0.8f;
  r.seed = 11;
  r.max_tokens = max_tokens;
  r.logprobs = 0;
  r.ignore_eos = true;
  return r;
}

class PromptCacheTiers : public testing::StoriesSuite {
 protected:
  void SetUp() override {
    StoriesSuite::SetUp();
    if (IsSkipped()) return;
    dir_ = fs::temp_directory_path() /
           ("tf_kv_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static int64_t block_bytes() { return model::KvCache::block_bytes(model_->config()); }
  EngineOptions options(int64_t pool_blocks = 64) const {
    EngineOptions o;
    o.eog_ids = {2};
    o.kv_budget_bytes = pool_blocks * block_bytes();
    return o;
  }
  // with_disk() whose block reads each wait `ms` first.
  // Block reads wait until the test lets them go, however slow the machine.
  EngineOptions with_held_reads() const {
    EngineOptions o = with_disk();
    o.tiers.disk_faults = std::make_shared<KvFaults>();
    o.tiers.disk_faults->hold_reads = true;
    return o;
  }
  EngineOptions with_disk(int64_t pool_blocks = 64) const {
    EngineOptions o = options(pool_blocks);
    o.tiers.disk_dir = dir_.string();
    o.tiers.disk_bytes = int64_t{1} << 30;
    o.tiers.disk_free_floor_bytes = 0;
    return o;
  }
  static Reply run(Engine& e, const Request& r) { return collect(**e.submit(r)); }
  static Reply fresh(const Request& r) {
    EngineOptions o;
    o.eog_ids = {2};
    o.prefix_cache = false;
    Engine e(model_, o);
    return run(e, r);
  }
  // Turn one of a conversation, then the follow-up prompt that repeats it and adds text.
  static Request follow_up(const Request& first, const Reply& r1) {
    Request second = make_request(first.id + 1, 1, 20);
    second.prompt = first.prompt;
    second.prompt.insert(second.prompt.end(), r1.ids.begin(), r1.ids.end());
    for (int i = 0; i < 20; ++i) second.prompt.push_back(40 + i);
    return second;
  }
  // Writes turn one to disk with one engine and returns the follow-up (its blocks: 6 of 16).
  Request write_turn_one() {
    Engine e(model_, with_disk());
    const Request first = make_request(1, 70, 40);
    const Reply r1 = run(e, first);
    e.flush_prompt_cache();
    EXPECT_GE(e.stats().cache.disk_writes, 6);
    return follow_up(first, r1);
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    for (const auto& f : fs::directory_iterator(dir_)) out.push_back(f.path());
    return out;
  }
  // The file holding block `index` of `prompt`'s chain.
  fs::path file_of_block(const Request& r, int index) const {
    // Keys chain from the root: walk the files' headers to find the one at depth `index`.
    std::vector<int32_t> tokens(r.prompt.begin() + index * 16, r.prompt.begin() + index * 16 + 16);
    for (const auto& p : files()) {
      std::ifstream in(p, std::ios::binary);
      std::vector<char> head(4096);
      in.read(head.data(), head.size());
      const std::string bytes(head.data(), static_cast<size_t>(in.gcount()));
      const std::string want(reinterpret_cast<const char*>(tokens.data()), 16 * sizeof(int32_t));
      if (bytes.find(want) != std::string::npos) return p;
    }
    return {};
  }

  fs::path dir_;
};

TEST_F(PromptCacheTiers, ResumesFromHostRamExactly) {
  EngineOptions o = options(20);
  o.tiers.host_bytes = 64 * block_bytes();
  Engine e(model_, o);
  const Request first = make_request(1, 70, 40);
  const Reply r1 = run(e, first);
  run(e, make_request(50, 300, 4, 1));  // pushes turn one out of the pool
  EXPECT_GE(e.stats().cache.spills, 5);
  const Request second = follow_up(first, r1);
  const Reply got = run(e, second);
  EXPECT_EQ(got.usage.cached_tokens, 96);  // six whole blocks of turn one (109 tokens computed)
  const CacheStats c = e.stats().cache;
  EXPECT_GE(c.host_restores, 5);
  EXPECT_EQ(c.hits, 1);
  EXPECT_EQ(c.host.hits, 1);  // its prefix came back from RAM
  EXPECT_EQ(c.pool.hits + c.disk.hits, 0);
  EXPECT_EQ(c.resumed_tokens, 96);
  EXPECT_GT(c.spill_seconds, 0);
  EXPECT_GT(c.restore_seconds, 0);
  EXPECT_EQ(c.host.state(), CacheTierState::kOn);
  EXPECT_EQ(c.disk.state(), CacheTierState::kOff);
  EXPECT_EQ(c.pool.state(), CacheTierState::kOn);
  EXPECT_GE(c.host.blocks, 5);
  EXPECT_EQ(c.host.bytes, c.host.blocks * block_bytes());
  EXPECT_LE(c.host.bytes, c.host.budget_bytes);
  EXPECT_EQ(c.warnings, 0);
  EXPECT_EQ(c.copy_failures, 0);
  EXPECT_TRUE(same(got, fresh(second)));
}

// The conversations used last, newest first, each with the tiers that hold its last block.
TEST_F(PromptCacheTiers, RecentStatesShowWhereEachConversationIsHeld) {
  EngineOptions o = with_disk(20);
  o.tiers.host_bytes = 64 * block_bytes();
  Engine e(model_, o);
  run(e, make_request(1, 70, 40));  // 109 positions computed: 6 whole blocks
  std::vector<CachedState> st = e.stats().recent_states;
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].tokens, 96);
  EXPECT_TRUE(st[0].pool);
  EXPECT_FALSE(st[0].host);
  const BlockKey first = st[0].key;
  run(e, make_request(50, 300, 4, 1));  // 303 computed: 18 blocks, turn one goes down to RAM
  e.flush_prompt_cache();
  run(e, make_request(60, 5, 1, 2));  // no whole block: no state, but the list is refreshed
  st = e.stats().recent_states;
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].tokens, 288);
  EXPECT_TRUE(st[0].pool && st[0].disk);
  EXPECT_EQ(st[1].key, first);
  EXPECT_FALSE(st[1].pool);
  EXPECT_TRUE(st[1].host && st[1].disk);
  EXPECT_GE(st[0].used_at, st[1].used_at);
  // The filler again: resumed from the pool alone.
  EXPECT_EQ(run(e, make_request(50, 300, 4, 1)).usage.cached_tokens, 288);
  const CacheStats c = e.stats().cache;
  EXPECT_EQ(c.pool.hits, 1);
  EXPECT_EQ(c.host.hits + c.disk.hits, 0);
}

// A host tier of `budget_blocks` over a small pool of the model's blocks.
struct HostTierSetup {
  HostTierSetup(const checkpoint::ModelConfig& config, int64_t budget_blocks)
      : kv(config, 4),
        transfer(model::make_host_kv_transfer(kv)),
        host(budget_blocks * static_cast<int64_t>(transfer->block_bytes()), transfer.get()) {}
  model::KvCache kv;
  std::unique_ptr<model::KvBlockTransfer> transfer;
  KvHostTier host;
  const std::vector<int32_t> tokens = std::vector<int32_t>(16, 5);
};

// A disk load's blocks wait in RAM even beyond the RAM tier's budget, then go back to it.
TEST_F(PromptCacheTiers, HostTierHoldsPinnedBlocksBeyondItsBudget) {
  HostTierSetup su(model_->config(), 2);
  auto& [kv, transfer, host, tokens] = su;
  for (uint64_t i = 0; i < 4; ++i) {
    KvHostTier::Entry* e = host.insert(BlockKey{i, 1}, BlockKey{}, tokens, true);
    ASSERT_NE(e, nullptr);
    std::memset(e->data, static_cast<int>(i), transfer->block_bytes());
  }
  EXPECT_EQ(host.blocks(), 4);  // pinned: none dropped
  for (uint64_t i = 0; i < 4; ++i) host.unpin(BlockKey{i, 1});
  EXPECT_EQ(host.blocks(), 2);  // back within budget, least recently used first
  EXPECT_FALSE(host.contains(BlockKey{0, 1}));
  ASSERT_TRUE(host.contains(BlockKey{3, 1}));
  EXPECT_EQ(host.get(BlockKey{3, 1})->data[7], 3);
  // Unpinned inserts never go beyond it.
  EXPECT_NE(host.insert(BlockKey{9, 1}, BlockKey{}, tokens, false), nullptr);
  EXPECT_EQ(host.blocks(), 2);
  EXPECT_FALSE(host.contains(BlockKey{2, 1}));
}

// Under its budget the tier keeps every block, whether or not the arena has allocated that far
// ahead yet (right after start-up it has not).
TEST_F(PromptCacheTiers, HostTierKeepsEveryBlockUnderItsBudget) {
  HostTierSetup su(model_->config(), 100);
  auto& [kv, transfer, host, tokens] = su;
  for (uint64_t i = 0; i < 100; ++i) {
    ASSERT_NE(host.insert(BlockKey{i, 2}, BlockKey{}, tokens, false), nullptr);
  }
  EXPECT_EQ(host.blocks(), 100);
  EXPECT_TRUE(host.contains(BlockKey{0, 2}));
  ASSERT_NE(host.insert(BlockKey{100, 2}, BlockKey{}, tokens, false), nullptr);
  EXPECT_EQ(host.blocks(), 100);  // at the budget: the least recently used goes
  EXPECT_FALSE(host.contains(BlockKey{0, 2}));
}

TEST_F(PromptCacheTiers, ResumesFromDiskAfterRestartExactly) {
  const Request second = write_turn_one();
  struct stat st {};
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  for (const auto& f : files()) {
    ASSERT_EQ(::stat(f.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << f;
  }
  Engine e(model_, with_disk());
  const Reply got = run(e, second);
  EXPECT_EQ(got.usage.cached_tokens, 96);
  const CacheStats c = e.stats().cache;
  EXPECT_EQ(c.disk_loads, 6);
  EXPECT_EQ(c.disk.hits, 1);  // the prefix came from disk
  EXPECT_EQ(c.host.hits + c.pool.hits, 0);
  EXPECT_GT(c.disk_load_seconds, 0);
  EXPECT_EQ(c.read_failures, 0);
  EXPECT_EQ(c.disk.state(), CacheTierState::kOn);
  EXPECT_GE(c.disk.blocks, 6);
  EXPECT_GT(c.disk.bytes, 0);
  EXPECT_LE(c.disk.bytes, c.disk.budget_bytes);
  EXPECT_EQ(c.warnings, 0);
  EXPECT_TRUE(same(got, fresh(second)));

  // Another model's engine (other weights) reads none of these files as its KV.
  EngineOptions other = with_disk();
  other.weights_id = "another checkpoint";
  Engine e2(model_, other);
  EXPECT_EQ(run(e2, second).usage.cached_tokens, 0);
  EXPECT_EQ(e2.stats().cache.disk_loads, 0);

  // Nor does the same model whose kernels compute in another way (Model::numerics(): here
  // attention on another instruction set; a build of another order revision differs alike).
  if (backend::cpu::attention_best_isa() == backend::cpu::AttentionIsa::kGeneric) return;
  struct Restore {
    ~Restore() { backend::cpu::attention_use_isa(backend::cpu::attention_best_isa()); }
  } restore;
  backend::cpu::attention_use_isa(backend::cpu::AttentionIsa::kGeneric);
  Engine e3(model_, with_disk());
  EXPECT_EQ(run(e3, second).usage.cached_tokens, 0);
  EXPECT_EQ(e3.stats().cache.disk_loads, 0);
}

// Damage to block 3's file: the request resumes from the three blocks before it.
TEST_F(PromptCacheTiers, DamagedOrMissingFilesResumeFromTheLongestValidPrefix) {
  for (const std::string damage : {"truncate", "flip", "delete"}) {
    fs::remove_all(dir_);
    const Request second = write_turn_one();
    const fs::path victim = file_of_block(second, 3);
    ASSERT_FALSE(victim.empty());
    Engine e(model_, with_disk());  // indexed at start-up, damaged afterwards
    if (damage == "truncate") {
      fs::resize_file(victim, fs::file_size(victim) - 100);
    } else if (damage == "flip") {
      std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(-50, std::ios::end);
      char c = 0;
      f.read(&c, 1);
      c ^= 1;
      f.seekp(-50, std::ios::end);
      f.write(&c, 1);
    } else {
      fs::remove(victim);
    }
    const Reply got = run(e, second);
    EXPECT_EQ(got.reason, FinishReason::kLength) << damage;
    EXPECT_EQ(got.usage.cached_tokens, 48) << damage;
    EXPECT_EQ(e.stats().cache.read_failures, 1) << damage;
    EXPECT_EQ(e.stats().cache.warnings, 1) << damage;
    EXPECT_TRUE(same(got, fresh(second))) << damage;
  }
}

TEST_F(PromptCacheTiers, ReadErrorsAndCorruptReadsFallBackToRecompute) {
  for (int fault = 0; fault < 2; ++fault) {
    fs::remove_all(dir_);
    const Request second = write_turn_one();
    EngineOptions o = with_disk();
    o.tiers.disk_faults = std::make_shared<KvFaults>();
    if (fault == 0) o.tiers.disk_faults->read_errno = EIO;
    if (fault == 1) o.tiers.disk_faults->flip_read_bit = true;
    Engine e(model_, o);
    const Reply got = run(e, second);
    EXPECT_EQ(got.usage.cached_tokens, 0) << fault;  // every block failed: nothing valid above
    EXPECT_EQ(e.stats().cache.read_failures, 6) << fault;
    EXPECT_EQ(e.stats().cache.warnings, 1) << fault;  // once, for six failures
    EXPECT_TRUE(same(got, fresh(second))) << fault;
  }
}

TEST_F(PromptCacheTiers, SlowReadsLetOtherRequestsRun) {
  const Request second = write_turn_one();
  const EngineOptions o = with_held_reads();
  Engine e(model_, o);
  auto loading = *e.submit(second);
  const Reply other = run(e, make_request(70, 10, 8, 2));
  EXPECT_EQ(other.reason, FinishReason::kLength);
  EXPECT_EQ(e.stats().cache.loading, 1);  // still waiting for its blocks
  o.tiers.disk_faults->hold_reads = false;
  const Reply got = collect(*loading);
  EXPECT_EQ(got.usage.cached_tokens, 96);
  EXPECT_TRUE(same(got, fresh(second)));
}

// A request cancelled while its blocks are being read: the reads end into slots nobody takes,
// and the same prompt sent again loads them afresh and replies as a fresh run does.
TEST_F(PromptCacheTiers, ACancelledLoadLeavesTheNextOneExact) {
  const Request second = write_turn_one();
  EngineOptions o = with_held_reads();
  Engine e(model_, o);
  auto loading = *e.submit(second);
  for (int i = 0; i < 5000 && e.stats().cache.loading == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(e.stats().cache.loading, 1);
  e.cancel(second.id);
  EXPECT_EQ(collect(*loading).reason, FinishReason::kCancelled);
  o.tiers.disk_faults->hold_reads = false;
  Request again = second;
  again.id = 90;
  const Reply got = run(e, again);
  EXPECT_EQ(got.usage.cached_tokens, 96);
  EXPECT_EQ(e.stats().cache.read_failures, 0);
  EXPECT_EQ(e.stats().cache.disk.hits, 1);
  EXPECT_TRUE(same(got, fresh(again)));
}

// A prompt's blocks come faster than the disk takes them (a backlog of one block): those that wait
// still reach the disk in order, so a restart resumes the whole prompt, not the part before the
// first block that did not fit.
TEST_F(PromptCacheTiers, WritesThatFallBehindStillReachTheDisk) {
  EngineOptions o = with_disk();
  o.tiers.disk_max_queued_bytes = block_bytes();
  const Request first = make_request(1, 300, 4);
  {
    Engine e(model_, o);
    run(e, first);
    e.flush_prompt_cache();
    EXPECT_EQ(e.stats().cache.disk_writes, 18);  // (300 + 4 - 1) / 16 whole blocks
    EXPECT_EQ(e.stats().cache.writes_skipped, 0);
  }
  Engine e(model_, o);
  Request again = first;
  again.id = 2;
  const Reply got = run(e, again);
  EXPECT_EQ(got.usage.cached_tokens, 288);
  EXPECT_EQ(e.stats().cache.disk.hits, 1);
  EXPECT_TRUE(same(got, fresh(again)));
}

TEST_F(PromptCacheTiers, FailingWritesKeepServingFromRam) {
  EngineOptions o = with_disk(20);
  o.tiers.host_bytes = 64 * block_bytes();
  o.tiers.disk_faults = std::make_shared<KvFaults>();
  o.tiers.disk_faults->write_errno = ENOSPC;
  Engine e(model_, o);
  const Request first = make_request(1, 70, 40);
  const Reply r1 = run(e, first);
  run(e, make_request(50, 300, 4, 1));
  e.flush_prompt_cache();
  EXPECT_GT(e.stats().cache.write_failures, 0);
  EXPECT_EQ(e.stats().cache.disk_writes, 0);
  EXPECT_EQ(e.stats().cache.disk.state(), CacheTierState::kPaused);
  EXPECT_EQ(e.stats().cache.warnings, 1);
  const Request second = follow_up(first, r1);
  const Reply got = run(e, second);
  EXPECT_EQ(got.usage.cached_tokens, 96);
  EXPECT_TRUE(same(got, fresh(second)));
  EXPECT_TRUE(files().empty());  // no temporary file left behind
}

TEST(KvDiskTier, RefusesUnsafeDirectories) {
  const fs::path base = fs::temp_directory_path() / ("tf_kv_dirs_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "real");
  fs::create_symlink(base / "real", base / "link");
  KvFileLayout layout{BlockKey{1, 2}, 16, 2, 8, 0};
  auto linked = KvDiskTier::open(disk_options(base / "link"), layout, nullptr);
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.error().message.find("symlink"), std::string::npos);
  fs::create_directories(base / "open");
  ::chmod((base / "open").c_str(), 0777);
  auto open = KvDiskTier::open(disk_options(base / "open"), layout, nullptr);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.error().message.find("writable by others"), std::string::npos);
  fs::remove_all(base);
}

// 1,000 files: this model's, damaged ones (dropped) and another model's (left alone).
TEST(KvDiskTier, StartsUpFastOverAThousandFiles) {
  const fs::path dir = fs::temp_directory_path() / ("tf_kv_many_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  KvFileLayout mine{BlockKey{1, 2}, 16, 4, 64, 0};
  KvFileLayout theirs = mine;
  theirs.model = BlockKey{3, 4};
  std::vector<uint8_t> data(mine.data_bytes(), 0x3f);
  int good = 0;
  for (int i = 0; i < 1000; ++i) {
    std::vector<int32_t> tokens(16, i);
    const BlockKey parent{static_cast<uint64_t>(i), 9};
    const BlockKey key = child_key(parent, tokens);
    const bool other = i % 20 == 7, bad = i % 20 == 13;
    auto bytes = encode_kv_file(other ? theirs : mine, key, parent, tokens, data);
    if (bad) bytes[90] ^= 1;  // a token id in the header: its checksum fails
    std::ofstream(dir / (key.hex() + ".kv"), std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    good += !other && !bad;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto tier = KvDiskTier::open(disk_options(dir), mine, nullptr);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(tier.ok());
  EXPECT_LT(secs, 1.0);
  EXPECT_EQ((*tier)->counters().blocks, good);
  EXPECT_EQ((*tier)->counters().ignored_files, 1000 - good);
  int64_t left = 0;
  for ([[maybe_unused]] const auto& f : fs::directory_iterator(dir)) ++left;
  EXPECT_EQ(left, good + 50);  // the damaged ones are gone, the other model's stay
  tier->reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tf::engine
