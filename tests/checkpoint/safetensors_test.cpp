// safetensors reader tests: the real tinystories-656k file (metadata alias), synthetic headers
// with bad JSON / offsets / dtypes, every truncation, and a sharded directory.
#include "checkpoint/safetensors.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tf::checkpoint {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

constexpr const char* kTiny = "../shared/models/tinystories-656k/model.safetensors";

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

Bytes make_st(std::string_view header, size_t data_bytes) {
  Bytes b(8);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(n >> (8 * i));
  b.insert(b.end(), header.begin(), header.end());
  for (size_t i = 0; i < data_bytes; ++i) b.push_back(static_cast<uint8_t>(i));
  return b;
}

std::string error_of(const Bytes& b) {
  auto r = SafetensorsFile::parse(b, "t.safetensors");
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string("<parsed>") : r.error().message;
}

TEST(Safetensors, TinyStoriesAlias) {
  if (!fs::exists(kTiny)) GTEST_SKIP() << kTiny << " not found (see DATA.md)";
  auto r = SafetensorsFile::open(kTiny);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& f = **r;
  const Tensor* head = f.find("lm_head.weight");
  const Tensor* emb = f.find("model.embed_tokens.weight");
  ASSERT_NE(head, nullptr);
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->data, head->data);
  EXPECT_EQ(emb->shape, (Shape{2048, 128}));
  EXPECT_EQ(emb->dtype, DType::kF32);
  EXPECT_EQ(f.aliases().at("model.embed_tokens.weight"), "lm_head.weight");
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.find("format"), nullptr);  // a metadata value that names no tensor is no alias
  const Tensor* q = f.find("model.layers.1.self_attn.q_proj.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->shape, (Shape{128, 128}));
  EXPECT_NE(f.find("model.norm.weight"), nullptr);
}

TEST(Safetensors, ParsesDtypesAndAliases) {
  std::string h =
      R"({"__metadata__":{"alias":"b"},"a":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[8,14]},)"
      R"("c":{"dtype":"I64","shape":[1],"data_offsets":[16,24]},)"
      R"("s":{"dtype":"F32","shape":[],"data_offsets":[24,28]}})";
  Bytes b = make_st(h, 28);
  auto r = SafetensorsFile::parse(b, "t.safetensors");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& f = **r;
  EXPECT_EQ(f.find("a")->dtype, DType::kF16);
  EXPECT_EQ(f.find("a")->shape, (Shape{2, 2}));
  EXPECT_EQ(f.find("b")->dtype, DType::kBF16);
  EXPECT_EQ(f.find("alias")->data, f.find("b")->data);
  EXPECT_EQ(static_cast<const uint8_t*>(f.find("b")->data), b.data() + 8 + h.size() + 8);
  EXPECT_EQ(f.find("s")->numel(), 1);
  EXPECT_EQ(f.find("c"), nullptr);
  auto c = f.get("c");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(c.error().message, "tensor 'c' has unsupported dtype I64");
  EXPECT_EQ(f.get("zz").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(f.names(), (std::vector<std::string>{"a", "alias", "b", "c", "s"}));
}

TEST(Safetensors, MalformedHeaders) {
  EXPECT_EQ(error_of({1, 2, 3}), "t.safetensors: truncated: 3 bytes, need at least 8");
  Bytes big = make_st("{}", 0);
  big[5] = 1;
  EXPECT_HAS(error_of(big), "exceeds the");
  Bytes past = make_st("{}", 0);
  past[0] = 50;
  EXPECT_EQ(error_of(past), "t.safetensors: header length 50 extends past end of file (size 10)");
  EXPECT_EQ(error_of(make_st("{\"a\":", 0)), "t.safetensors: header is not valid JSON");
  EXPECT_EQ(error_of(make_st("[1,2]", 0)), "t.safetensors: header is not a JSON object");
  std::string deep =
      "{\"__metadata__\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(error_of(make_st(deep, 0)),
            "t.safetensors: header: JSON nesting exceeds 512 levels (at byte 528)");
  EXPECT_EQ(error_of(make_st(R"({"a":{"dtype":"F32","shape":[1]}})", 4)),
            "t.safetensors: tensor 'a': data_offsets must be two non-negative integers");
  EXPECT_EQ(error_of(make_st(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 4)),
            "t.safetensors: tensor 'a': data_offsets must be two non-negative integers");
  EXPECT_EQ(error_of(make_st(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", 4)),
            "t.safetensors: tensor 'a': data_offsets [0, 8] out of range (data section 4 bytes)");
  EXPECT_EQ(error_of(make_st(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4)),
            "t.safetensors: tensor 'a': data_offsets [4, 0] out of range (data section 4 bytes)");
  EXPECT_EQ(error_of(make_st(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)),
            "t.safetensors: tensor 'a': data_offsets span 8 bytes but 3 F32 elements need 12");
  EXPECT_EQ(error_of(make_st(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                             8)),
            "t.safetensors: tensors 'a' and 'b' overlap");
  EXPECT_EQ(error_of(make_st(R"({"a":{"dtype":"Q9","shape":[1],"data_offsets":[0,1]}})", 1)),
            "t.safetensors: tensor 'a': unknown dtype 'Q9'");
  EXPECT_EQ(error_of(make_st(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4)),
            "t.safetensors: tensor 'a': shape holds a non-integer");
  EXPECT_EQ(error_of(make_st(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],)"
                             R"("data_offsets":[0,4]}})",
                             4)),
            "t.safetensors: tensor 'a': element count overflows");
  EXPECT_EQ(error_of(make_st(R"({"a":[]})", 0)),
            "t.safetensors: tensor 'a' entry is not an object");
  EXPECT_EQ(error_of(make_st(R"({"__metadata__":{"x":1}})", 0)),
            "t.safetensors: __metadata__ 'x' is not a string");
  EXPECT_EQ(error_of(make_st("{\"\xff\":{}}", 0)), "t.safetensors: header is not valid JSON");
}

TEST(Safetensors, EveryTruncationFailsCleanly) {
  Bytes b = make_st(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                    R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]}})",
                    12);
  ASSERT_TRUE(SafetensorsFile::parse(b, "t.safetensors").ok());
  for (size_t cut = 0; cut < b.size(); ++cut) {
    Bytes c(b.begin(), b.begin() + cut);
    auto r = SafetensorsFile::parse(c, "t.safetensors");
    EXPECT_FALSE(r.ok()) << "cut at " << cut;
  }
}

class ShardedDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("tf_ckpt_shards_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const Bytes& b) {
    std::ofstream(dir_ / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  void write(const std::string& name, const std::string& s) {
    std::ofstream(dir_ / name, std::ios::binary) << s;
  }
  fs::path dir_;
};

TEST_F(ShardedDir, OpensEveryShard) {
  write("model-00001-of-00002.safetensors",
        make_st(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8));
  write("model-00002-of-00002.safetensors",
        make_st(R"({"y":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4));
  write("model.safetensors.index.json",
        std::string(R"({"metadata":{"total_size":12},"weight_map":{)"
                    R"("x":"model-00001-of-00002.safetensors",)"
                    R"("y":"model-00002-of-00002.safetensors"}})"));
  auto r = SafetensorsFile::open_dir(dir_.string());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->find("x")->dtype, DType::kF32);
  EXPECT_EQ((*r)->find("y")->dtype, DType::kF16);
  EXPECT_EQ((*r)->names().size(), 2u);
}

TEST_F(ShardedDir, IndexErrors) {
  write("model.safetensors.index.json", std::string(R"({"weight_map":{"x":"../evil"}})"));
  auto r = SafetensorsFile::open_dir(dir_.string());
  ASSERT_FALSE(r.ok());
  EXPECT_HAS(r.error().message, "weight_map 'x' names bad shard '../evil'");
  write("model.safetensors.index.json", std::string(R"({"weight_map":{"x":"a.safetensors"}})"));
  write("a.safetensors", make_st(R"({"z":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4));
  r = SafetensorsFile::open_dir(dir_.string());
  ASSERT_FALSE(r.ok());
  EXPECT_HAS(r.error().message, "tensor 'x' is not in shard 'a.safetensors'");
  write("model.safetensors.index.json", std::string("not json"));
  r = SafetensorsFile::open_dir(dir_.string());
  ASSERT_FALSE(r.ok());
  EXPECT_HAS(r.error().message, "model.safetensors.index.json: not a JSON object");
  fs::remove(dir_ / "model.safetensors.index.json");
  r = SafetensorsFile::open_dir(dir_.string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace tf::checkpoint
