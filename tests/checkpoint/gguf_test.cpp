// GGUF reader tests: real files from ../shared, every metadata type round-tripped through an
// in-memory writer, and malformed files whose errors must name the problem (never crash).
#include "checkpoint/gguf.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <limits>

#include "checkpoint/model_config.h"
#include "gguf_writer.h"

namespace tf::checkpoint {
namespace {

using testing::Bytes;
using testing::GgufWriter;
using testing::put;
using testing::put_str;

constexpr const char* kStories = "../shared/models/stories260K.gguf";

std::string error_of(const Bytes& b) {
  auto r = GgufFile::parse(b, "t.gguf");
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string("<parsed>") : r.error().message;
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

TEST(Gguf, Stories260K) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found (see DATA.md)";
  auto f = GgufFile::open(kStories);
  ASSERT_TRUE(f.ok()) << f.error().message;
  const auto& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), 32u);
  EXPECT_EQ(*g.get_string("general.architecture"), "llama");
  EXPECT_EQ(g.get_string_array("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_EQ(g.get_float_array("tokenizer.ggml.scores")->size(), 512u);
  EXPECT_EQ(*g.get_int("tokenizer.ggml.seperator_token_id"), 4294967295);
  const GgufTensorInfo* e = g.find_tensor("token_embd.weight");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->supported);
  EXPECT_EQ(e->tensor.dtype, DType::kF32);
  EXPECT_EQ(e->tensor.shape, (Shape{512, 64}));
  EXPECT_NE(e->tensor.data, nullptr);
  const GgufTensorInfo* q = g.find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->tensor.shape, (Shape{64, 64}));
  EXPECT_EQ(g.tensors().size(), 48u);

  auto c = config_from_gguf(g);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->family, "llama");
  EXPECT_EQ(c->hidden_size, 64);
  EXPECT_EQ(c->intermediate_size, 172);
  EXPECT_EQ(c->num_layers, 5);
  EXPECT_EQ(c->num_heads, 8);
  EXPECT_EQ(c->num_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_EQ(c->rope_dim, 8);
  EXPECT_EQ(c->vocab_size, 512);
  EXPECT_EQ(c->max_position, 2048);
  EXPECT_NEAR(c->rms_norm_eps, 1e-5, 1e-10);
  EXPECT_EQ(c->rope_theta, 10000.0);
  EXPECT_EQ(c->rope_style, RopeStyle::kInterleaved);
  EXPECT_FALSE(c->tie_word_embeddings);  // output.weight is stored
  EXPECT_EQ(c->bos_token_id, 1);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int>{2}));
  EXPECT_TRUE(c->validate().ok());
}

TEST(Gguf, DefaultModelSmolLM2) {
  const char* home = std::getenv("TENSORFOLD_HOME");
  std::string base =
      home ? home
           : std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cache/tensorfold";
  std::string path = base + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.error().message;
  bool q41 = false, q80 = false, f32 = false;
  for (const auto& t : (*f)->tensors()) {
    EXPECT_TRUE(t.supported) << t.name;
    q41 |= t.tensor.dtype == DType::kQ4_1;
    q80 |= t.tensor.dtype == DType::kQ8_0;
    f32 |= t.tensor.dtype == DType::kF32;
  }
  EXPECT_TRUE(q41 && q80 && f32);
  auto c = config_from_gguf(**f);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->num_layers, 30);
  EXPECT_EQ(c->hidden_size, 576);
  EXPECT_EQ(c->num_heads, 9);
  EXPECT_EQ(c->num_kv_heads, 3);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->vocab_size, 49152);
  EXPECT_TRUE(c->validate().ok()) << c->validate().error().message;
}

// One key of each of the 13 value types, plus nested arrays; all must read back exactly.
GgufWriter all_types_writer() {
  GgufWriter w;
  w.scalar<uint8_t>("u8", GgufType::kU8, 200);
  w.scalar<int8_t>("i8", GgufType::kI8, -100);
  w.scalar<uint16_t>("u16", GgufType::kU16, 60000);
  w.scalar<int16_t>("i16", GgufType::kI16, -30000);
  w.scalar<uint32_t>("u32", GgufType::kU32, 4000000000u);
  w.scalar<int32_t>("i32", GgufType::kI32, -2000000000);
  w.scalar<float>("f32", GgufType::kF32, 1.5f);
  w.scalar<uint8_t>("bool", GgufType::kBool, 1);
  w.str("string", "héllo");
  w.scalar<uint64_t>("u64", GgufType::kU64, std::numeric_limits<uint64_t>::max());
  w.scalar<uint64_t>("u64small", GgufType::kU64, 7);
  w.scalar<int64_t>("i64", GgufType::kI64, std::numeric_limits<int64_t>::min());
  w.scalar<double>("f64", GgufType::kF64, 0.1);
  w.str_array("strs", {"a", "", "ccc"});
  Bytes arr;  // [[1, 2], [3]] as array of array of i32
  put<uint32_t>(arr, static_cast<uint32_t>(GgufType::kArray));
  put<uint64_t>(arr, 2);
  put<uint32_t>(arr, static_cast<uint32_t>(GgufType::kI32));
  put<uint64_t>(arr, 2);
  put<int32_t>(arr, 1);
  put<int32_t>(arr, 2);
  put<uint32_t>(arr, static_cast<uint32_t>(GgufType::kI32));
  put<uint64_t>(arr, 1);
  put<int32_t>(arr, 3);
  w.raw("nested", GgufType::kArray, arr);
  Bytes fa;
  put<uint32_t>(fa, static_cast<uint32_t>(GgufType::kF32));
  put<uint64_t>(fa, 2);
  put<float>(fa, 0.25f);
  put<float>(fa, -2.0f);
  w.raw("floats", GgufType::kArray, fa);
  w.tensor_f32("w", {4, 2});
  return w;
}

TEST(Gguf, EveryValueTypeRoundTrips) {
  Bytes b = all_types_writer().build();
  auto r = GgufFile::parse(b, "t.gguf");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const GgufFile& g = **r;
  EXPECT_EQ(*g.get_int("u8"), 200);
  EXPECT_EQ(*g.get_int("i8"), -100);
  EXPECT_EQ(*g.get_int("u16"), 60000);
  EXPECT_EQ(*g.get_int("i16"), -30000);
  EXPECT_EQ(*g.get_int("u32"), 4000000000);
  EXPECT_EQ(*g.get_int("i32"), -2000000000);
  EXPECT_EQ(*g.get_float("f32"), 1.5);
  EXPECT_EQ(*g.get_bool("bool"), true);
  EXPECT_EQ(*g.get_string("string"), "héllo");
  EXPECT_EQ(std::get<uint64_t>(g.find("u64")->v), std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(g.get_int("u64").ok());
  EXPECT_EQ(*g.get_int("u64small"), 7);
  EXPECT_EQ(*g.get_int("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*g.get_float("f64"), 0.1);
  EXPECT_EQ(*g.get_float("i32"), -2e9);
  EXPECT_EQ(*g.get_string_array("strs"), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(*g.get_float_array("floats"), (std::vector<float>{0.25f, -2.0f}));
  for (const char* k : {"u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64"}) {
    EXPECT_TRUE(g.find(k)->is_int()) << k;
  }
  const GgufValue* n = g.find("nested");
  ASSERT_TRUE(n && n->is_array());
  EXPECT_EQ(n->elem_type, GgufType::kArray);
  const auto& outer = *std::get<std::shared_ptr<GgufArray>>(n->v);
  ASSERT_EQ(outer.size(), 2u);
  EXPECT_EQ(outer[0].elem_type, GgufType::kI32);
  const auto& in0 = *std::get<std::shared_ptr<GgufArray>>(outer[0].v);
  ASSERT_EQ(in0.size(), 2u);
  EXPECT_EQ(std::get<int64_t>(in0[1].v), 2);
  EXPECT_EQ(std::get<std::shared_ptr<GgufArray>>(outer[1].v)->size(), 1u);

  auto bad = g.get_string("u8");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message, "t.gguf: metadata 'u8' is u8, expected a string");
  EXPECT_EQ(g.get_int("missing").error().code, ErrorCode::kNotFound);
  EXPECT_HAS(g.get_int_array("strs").error().message,
             "array of string, expected an array of integer");

  const GgufTensorInfo* t = g.find_tensor("w");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->tensor.shape, (Shape{2, 4}));
  EXPECT_EQ(t->nbytes, 32u);
  EXPECT_EQ(t->tensor.as<float>()[5], 5.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->tensor.data) % 32,
            reinterpret_cast<uintptr_t>(b.data()) % 32);
}

TEST(Gguf, EveryTruncationFailsCleanly) {
  Bytes b = all_types_writer().build();
  ASSERT_TRUE(GgufFile::parse(b, "t.gguf").ok());
  for (size_t cut = 0; cut < b.size(); ++cut) {
    Bytes c(b.begin(), b.begin() + cut);
    auto r = GgufFile::parse(c, "t.gguf");
    ASSERT_FALSE(r.ok()) << "cut at " << cut;
    EXPECT_EQ(r.error().message.rfind("t.gguf: ", 0), 0u) << r.error().message;
  }
}

TEST(Gguf, BadMagicAndVersion) {
  EXPECT_EQ(error_of({'G', 'G', 'M', 'L', 0, 0, 0, 0}), "t.gguf: not a GGUF file (bad magic)");
  GgufWriter w;
  w.version = 1;
  EXPECT_EQ(error_of(w.build()), "t.gguf: unsupported GGUF version 1 (want 2 or 3)");
  w.version = 2;
  EXPECT_TRUE(GgufFile::parse(w.build(), "t.gguf").ok());
}

TEST(Gguf, TensorDataPastEnd) {
  GgufWriter w;
  w.tensor_f32("a", {8});
  w.tensors[0].offset_override = 4096;
  EXPECT_EQ(error_of(w.build()),
            "t.gguf: tensor 'a' data [offset 4160, 32 bytes] extends past end of file (size 64)");
  GgufWriter w2;
  w2.tensor_f32("a", {8});
  Bytes b = w2.build();
  b.pop_back();
  EXPECT_HAS(error_of(b),
             "tensor 'a' data [offset 64, 32 bytes] extends past end of file (size 95)");
}

TEST(Gguf, MisalignedOffset) {
  GgufWriter w;
  w.tensor_f32("a", {8});
  w.tensors[0].offset_override = 4;
  EXPECT_EQ(error_of(w.build()),
            "t.gguf: tensor 'a' offset 4 is not a multiple of the alignment 32");
}

TEST(Gguf, CustomAlignment) {
  GgufWriter w;
  w.alignment = 64;
  w.u32("general.alignment", 64);
  w.tensor_f32("a", {3});
  w.tensor_f32("b", {5});
  auto r = GgufFile::parse(w.build(), "t.gguf");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->alignment(), 64u);
  EXPECT_EQ((*r)->find_tensor("b")->offset, 64u);
  EXPECT_EQ((*r)->data_offset() % 64, 0u);
  GgufWriter bad;
  bad.u32("general.alignment", 48);
  EXPECT_EQ(error_of(bad.build()), "t.gguf: general.alignment 48 is not a power of two");
}

TEST(Gguf, AbsurdCounts) {
  Bytes b = {'G', 'G', 'U', 'F'};
  put<uint32_t>(b, 3);
  put<uint64_t>(b, uint64_t{1} << 60);
  put<uint64_t>(b, 0);
  EXPECT_EQ(error_of(b), "t.gguf: tensor count 1152921504606846976 is larger than the file allows");
  Bytes k = {'G', 'G', 'U', 'F'};
  put<uint32_t>(k, 3);
  put<uint64_t>(k, 0);
  put<uint64_t>(k, ~uint64_t{0});
  EXPECT_HAS(error_of(k), "metadata count 18446744073709551615 is larger than the file allows");

  GgufWriter w;
  Bytes arr;
  put<uint32_t>(arr, static_cast<uint32_t>(GgufType::kU64));
  put<uint64_t>(arr, uint64_t{1} << 40);
  w.raw("big", GgufType::kArray, arr);
  EXPECT_EQ(error_of(w.build()),
            "t.gguf: metadata 'big': array of 1099511627776 u64 elements is larger than the file "
            "allows");

  GgufWriter s;
  Bytes str;
  put<uint64_t>(str, uint64_t{1} << 50);
  s.raw("s", GgufType::kString, str);
  EXPECT_HAS(error_of(s.build()), "metadata 's' string of length 1125899906842624");
}

TEST(Gguf, BadKeysAndNames) {
  GgufWriter w;
  w.u32("ok", 1);
  w.u32("bad\xff\xfe", 1);
  EXPECT_EQ(error_of(w.build()), "t.gguf: metadata key #1 is not valid UTF-8");
  GgufWriter d;
  d.u32("k", 1);
  d.u32("k", 2);
  EXPECT_EQ(error_of(d.build()), "t.gguf: duplicate metadata key 'k'");
  GgufWriter t;
  t.tensor_f32("x", {2});
  t.tensor_f32("x", {2});
  EXPECT_EQ(error_of(t.build()), "t.gguf: duplicate tensor name 'x'");
  GgufWriter u;
  u.tensor_f32("\xc0\x80", {2});  // overlong NUL
  EXPECT_EQ(error_of(u.build()), "t.gguf: tensor #0 name is not valid UTF-8");
  GgufWriter v;
  v.raw("v", static_cast<GgufType>(13), {});
  EXPECT_EQ(error_of(v.build()), "t.gguf: metadata 'v': invalid value type 13");
  GgufWriter bo;
  bo.scalar<uint8_t>("b", GgufType::kBool, 2);
  EXPECT_EQ(error_of(bo.build()), "t.gguf: metadata 'b': bool value 2 is neither 0 nor 1");
}

TEST(Gguf, ShapeChecks) {
  GgufWriter w;
  w.tensor_f32("five", {1, 1, 1, 1, 1});
  EXPECT_EQ(error_of(w.build()), "t.gguf: tensor 'five' has 5 dimensions (at most 4)");
  GgufWriter o;
  o.tensors.push_back({"huge", {uint64_t{1} << 32, uint64_t{1} << 32}, 0, {}});
  EXPECT_EQ(error_of(o.build()), "t.gguf: tensor 'huge' element count overflows");
  GgufWriter q;
  q.tensors.push_back({"q", {33, 2}, 2, Bytes(18 * 3)});  // Q4_0 blocks hold 32
  EXPECT_EQ(error_of(q.build()),
            "t.gguf: tensor 'q' (Q4_0): innermost dimension 33 is not a multiple of the block "
            "size 32");
  GgufWriter unk;
  unk.tensors.push_back({"u", {4}, 999, Bytes(16)});
  EXPECT_EQ(error_of(unk.build()), "t.gguf: tensor 'u' has unknown ggml type 999");
  GgufWriter ok;
  ok.tensors.push_back({"q", {64, 3}, 8, Bytes(34 * 2 * 3)});  // Q8_0
  auto r = GgufFile::parse(ok.build(), "t.gguf");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->find_tensor("q")->tensor.shape, (Shape{3, 64}));
  EXPECT_EQ((*r)->find_tensor("q")->tensor.nbytes(), 34u * 2 * 3);
}

TEST(Gguf, UnsupportedTypeOpensButReportsOnUse) {
  GgufWriter w;
  w.tensors.push_back({"iq", {256}, 16, Bytes(66)});  // IQ2_XXS: known layout, no DType
  auto r = GgufFile::parse(w.build(), "t.gguf");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const GgufTensorInfo* t = (*r)->find_tensor("iq");
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(t->supported);
  EXPECT_EQ(t->nbytes, 66u);
  auto g = (*r)->get_tensor("iq");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(g.error().message, "t.gguf: tensor 'iq' has unsupported ggml type IQ2_XXS (16)");
  EXPECT_EQ((*r)->get_tensor("nope").error().code, ErrorCode::kNotFound);
}

TEST(Gguf, NestingDepthLimit) {
  Bytes arr;
  for (int i = 0; i < 20; ++i) {
    put<uint32_t>(arr, static_cast<uint32_t>(GgufType::kArray));
    put<uint64_t>(arr, 1);
  }
  put<uint32_t>(arr, static_cast<uint32_t>(GgufType::kU8));
  put<uint64_t>(arr, 0);
  GgufWriter w;
  w.raw("deep", GgufType::kArray, arr);
  EXPECT_EQ(error_of(w.build()), "t.gguf: metadata 'deep': arrays nested deeper than 8");
  // 100,000 levels: refused at the ninth, before the reader recurses any further.
  Bytes hostile;
  for (int i = 0; i < 100000; ++i) {
    put<uint32_t>(hostile, static_cast<uint32_t>(GgufType::kArray));
    put<uint64_t>(hostile, 1);
  }
  GgufWriter h;
  h.raw("deep", GgufType::kArray, hostile);
  EXPECT_EQ(error_of(h.build()), "t.gguf: metadata 'deep': arrays nested deeper than 8");
}

TEST(Gguf, OpenMissingFile) {
  auto r = GgufFile::open("../shared/models/does-not-exist.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_HAS(r.error().message, "does-not-exist.gguf");
}

}  // namespace
}  // namespace tf::checkpoint
