// The KV cache manager's bookkeeping without a model: reference counts, the prefix index, and
// eviction of least-recently-used leaves only.
#include "engine/kv_cache_manager.h"

#include <gtest/gtest.h>

namespace tf::engine {
namespace {

constexpr int kBs = 4;

Sequence make_seq(std::vector<int32_t> tokens, const BlockKey& root) {
  Sequence s;
  s.tokens = std::move(tokens);
  s.prompt_len = static_cast<int64_t>(s.tokens.size());
  s.cache_root = root;
  return s;
}

// Runs `seq` to its end as the engine would: reserve, compute everything, commit, release.
void run_to_end(KvCacheManager& m, Sequence& seq) {
  m.attach_prefix(seq);
  ASSERT_TRUE(m.reserve(seq, static_cast<int64_t>(seq.tokens.size())));
  seq.computed = static_cast<int64_t>(seq.tokens.size());
  m.commit(seq);
  m.release(seq);
}

TEST(KvKey, StableAndSensitiveToEveryField) {
  ModelFingerprint f{"llama", "w1", "f32", 16, 2, 2, 8, ""};
  const BlockKey a = f.key();
  EXPECT_EQ(a, f.key());
  EXPECT_EQ(a.hex().size(), 32u);
  for (int field = 0; field < 8; ++field) {
    ModelFingerprint g = f;
    switch (field) {
      case 0: g.architecture = "qwen2"; break;
      case 1: g.weights_id = "w2"; break;
      case 2: g.kv_dtype = "bf16"; break;
      case 3: g.block_size = 32; break;
      case 4: g.layers = 3; break;
      case 5: g.kv_heads = 1; break;
      case 6: g.head_dim = 16; break;
      default: g.numerics = "cpu order=1 attention=avx2 activations=int8"; break;
    }
    EXPECT_NE(g.key(), a) << "field " << field;
  }
  EXPECT_NE(root_key(a, ""), root_key(a, "tenant"));
  const std::vector<int32_t> t = {1, 2, 3, 4};
  EXPECT_NE(child_key(root_key(a, ""), t), child_key(root_key(a, "x"), t));
  // A fixed value: keys name files on disk, so they must not change between builds.
  EXPECT_EQ(child_key(BlockKey{}, t).hex(), "f065302ded10703519cac9011000f83b");
}

TEST(KvCacheManager, SharesPrefixesAndCountsReferences) {
  KvCacheManager m(16, kBs, true);
  const BlockKey root = root_key(ModelFingerprint{"a", "b", "f32", kBs, 1, 1, 1, ""}.key(), "");
  Sequence a = make_seq({1, 2, 3, 4, 5, 6, 7, 8, 9}, root);
  run_to_end(m, a);
  EXPECT_EQ(m.cached_blocks(), 2);
  EXPECT_EQ(m.num_free(), 14);

  Sequence b = make_seq({1, 2, 3, 4, 5, 6, 7, 8, 10, 11}, root);
  m.attach_prefix(b);
  EXPECT_EQ(b.cached_tokens, 8);
  EXPECT_EQ(b.computed, 8);
  EXPECT_EQ(m.refs(b.blocks[0]), 2);
  EXPECT_EQ(m.evictable(), 0);  // both are in use
  m.release(b);
  EXPECT_EQ(m.evictable(), 1);  // the leaf only; its parent has a child

  // Another salt shares nothing.
  Sequence c = make_seq({1, 2, 3, 4, 5, 6, 7, 8, 10}, root_key(root, "other"));
  m.attach_prefix(c);
  EXPECT_EQ(c.cached_tokens, 0);
  m.release(c);
}

TEST(KvCacheManager, EvictsLeastRecentlyUsedLeavesFirst) {
  KvCacheManager m(6, kBs, true);
  const BlockKey root = root_key(ModelFingerprint{"a", "b", "f32", kBs, 1, 1, 1, ""}.key(), "");
  Sequence a = make_seq({1, 1, 1, 1, 2, 2, 2, 2}, root);  // chain a: two blocks
  Sequence b = make_seq({3, 3, 3, 3, 4, 4, 4, 4}, root);  // chain b: two blocks
  run_to_end(m, a);
  run_to_end(m, b);
  EXPECT_EQ(m.num_free(), 2);
  // Touch chain a again: b becomes the least recently used.
  Sequence a2 = make_seq({1, 1, 1, 1, 2, 2, 2, 2, 9}, root);
  m.attach_prefix(a2);
  EXPECT_EQ(a2.cached_tokens, 8);
  m.release(a2);
  ASSERT_TRUE(m.make_free(4));  // takes b's leaf, then b's root block
  EXPECT_EQ(m.cached_blocks(), 2);
  Sequence b2 = make_seq({3, 3, 3, 3, 4, 4, 4, 4, 9}, root);
  m.attach_prefix(b2);
  EXPECT_EQ(b2.cached_tokens, 0);
  m.release(b2);
  Sequence a3 = make_seq({1, 1, 1, 1, 2, 2, 2, 2, 9}, root);
  m.attach_prefix(a3);
  EXPECT_EQ(a3.cached_tokens, 8);
  // Blocks in use are never evicted: only 4 can be freed now.
  EXPECT_FALSE(m.make_free(5));
  EXPECT_EQ(m.cached_blocks(), 2);
  m.release(a3);
  EXPECT_TRUE(m.make_free(6));
  EXPECT_EQ(m.cached_blocks(), 0);
}

TEST(KvCacheManager, WithoutAnIndexNothingIsKept) {
  KvCacheManager m(4, kBs, false);
  Sequence a = make_seq({1, 2, 3, 4, 5}, BlockKey{});
  run_to_end(m, a);
  EXPECT_EQ(m.cached_blocks(), 0);
  EXPECT_EQ(m.num_free(), 4);
}

}  // namespace
}  // namespace tf::engine
