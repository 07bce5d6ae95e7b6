// base/: Result propagation, half/bfloat16 conversions, thread-pool chunking, mapped files.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

#include "base/half.h"
#include "base/mapped_file.h"
#include "base/result.h"
#include "base/thread_pool.h"

namespace tf {
namespace {

Result<int> parse_positive(int x) {
  if (x <= 0) return make_error(ErrorCode::kInvalidArgument, "{} is not positive", x);
  return x;
}

Result<int> doubled(int x) {
  TF_ASSIGN_OR_RETURN(int v, parse_positive(x));
  return 2 * v;
}

TEST(Result, PropagatesValuesAndErrors) {
  EXPECT_EQ(*doubled(4), 8);
  auto r = doubled(-1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().with_context("field").message, "field: -1 is not positive");
}

TEST(Half, Fp16RoundTripsEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = fp16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_fp16(f), h) << std::hex << h;
  }
  EXPECT_EQ(fp16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_f32(0x0001), std::ldexp(1.0f, -24));         // smallest subnormal
  EXPECT_EQ(f32_to_fp16(65520.0f), 0x7c00);                      // rounds to infinity
  EXPECT_EQ(f32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
}

TEST(Half, Bf16RoundsToNearestEven) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST(ThreadPool, CoversRangeOnceWithGrainAlignedChunks) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (size_t n : {0u, 1u, 7u, 64u, 1000u}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, 4, [&](size_t b, size_t e) {
        EXPECT_EQ(b % 4, 0u);
        for (size_t i = b; i < e; ++i) hits[i]++;
      });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << threads << " " << n << " " << i;
    }
  }
}

TEST(MappedFile, MapsAndNamesMissingFiles) {
  auto missing = MappedFile::open("/nonexistent/file.bin");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("/nonexistent/file.bin"), std::string::npos);

  std::string path = ::testing::TempDir() + "/mapped.bin";
  std::ofstream(path) << "hello";
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f->data()), f->size()), "hello");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tf
