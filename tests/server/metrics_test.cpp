// The metrics registry, its Prometheus text, API key files and the router's key and ops checks
// (the live server's /metrics is checked by tests/integration/test_metrics.py with Prometheus).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <thread>

#include "server/api_keys.h"
#include "server/metrics_registry.h"
#include "server/monitor.h"
#include "server/prometheus_text.h"

namespace tf::server {
namespace {

std::string hex(const Digest& d) {
  std::string s;
  for (unsigned char c : d) s += fmt::format("{:02x}", c);
  return s;
}

TEST(Sha256, KnownVectors) {
  // FIPS 180-2 examples.
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(KeyFile, NamedAndBareKeysCommentsAndErrors) {
  auto keys = parse_key_file("# team keys\nalice: sk-a \n\nsk-bare\r\nbob:sk-b\n", "keys.txt");
  ASSERT_TRUE(keys.ok()) << keys.error().message;
  ASSERT_EQ(keys->size(), 3u);
  EXPECT_EQ((*keys)[0].name, "alice");
  EXPECT_EQ((*keys)[0].digest, sha256("sk-a"));
  EXPECT_EQ((*keys)[1].name, "sha256:" + hex(sha256("sk-bare")).substr(0, 8));
  EXPECT_EQ((*keys)[2].name, "bob");
  auto bad = parse_key_file("ok\n:nokey\n", "keys.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("keys.txt:2"), std::string::npos);
  EXPECT_FALSE(parse_key_file("carol:\n", "k").ok());
}

TEST(ApiKeys, IdentifiesByDigestAndReloads) {
  const std::string path = ::testing::TempDir() + "/tf_keys_test.txt";
  { std::ofstream(path) << "alice:one\n"; }
  ApiKeys keys({"cli-key"}, path);
  EXPECT_TRUE(keys.required());
  ASSERT_TRUE(keys.reload().ok());
  EXPECT_EQ(keys.identify("one"), "alice");
  EXPECT_EQ(keys.identify("cli-key"), "default");
  EXPECT_EQ(keys.identify("two"), std::nullopt);
  EXPECT_EQ(keys.identify(""), std::nullopt);
  { std::ofstream(path) << "bob:two\n"; }
  auto n = keys.reload();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2u);  // bob and the command line's key
  EXPECT_EQ(keys.identify("one"), std::nullopt);
  EXPECT_EQ(keys.identify("two"), "bob");
  { std::ofstream(path) << "# nothing\n"; }
  EXPECT_FALSE(keys.reload().ok());  // an empty file would open the server: the old keys stay
  EXPECT_EQ(keys.identify("two"), "bob");
  EXPECT_FALSE(ApiKeys().required());
}

TEST(Histogram, BucketsAreCumulativeAndInclusive) {
  Histogram h({0.1, 1.0, 10.0});
  for (double v : {0.05, 0.1, 0.5, 1.0, 5.0, 100.0}) h.observe(v);
  const auto s = h.snapshot();
  EXPECT_EQ(s.cumulative, (std::vector<int64_t>{2, 4, 5, 6}));
  EXPECT_DOUBLE_EQ(s.sum, 106.65);
}

TEST(Histogram, ConcurrentObservationsAreAllCounted) {
  Histogram h(ttft_buckets());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < 10000; ++i) h.observe(0.001 * (i % 100) + t);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(h.snapshot().cumulative.back(), 40000);
}

TEST(Buckets, TokenCountsFollowOneTwoFive) {
  EXPECT_EQ(token_count_buckets(2048),
            (std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000}));
  EXPECT_EQ(token_count_buckets(1), (std::vector<double>{1}));
}

TEST(PrometheusText, FormatsFamiliesSamplesAndHistograms) {
  PrometheusText t;
  t.family("vllm:x_total", "counter", "An x.");
  t.sample("vllm:x_total", {{"model_name", "a\"b\\c\nd"}}, 3);
  t.family("vllm:h", "histogram", "An h.");
  t.histogram("vllm:h", {{"model_name", "m"}}, {0.5, 1}, {1, 2, 3}, 2.25);
  EXPECT_EQ(t.take(),
            "# HELP vllm:x_total An x.\n# TYPE vllm:x_total counter\n"
            "vllm:x_total{model_name=\"a\\\"b\\\\c\\nd\"} 3\n"
            "# HELP vllm:h An h.\n# TYPE vllm:h histogram\n"
            "vllm:h_bucket{model_name=\"m\",le=\"0.5\"} 1\n"
            "vllm:h_bucket{model_name=\"m\",le=\"1\"} 2\n"
            "vllm:h_bucket{model_name=\"m\",le=\"+Inf\"} 3\n"
            "vllm:h_sum{model_name=\"m\"} 2.25\n"
            "vllm:h_count{model_name=\"m\"} 3\n");
  EXPECT_EQ(prometheus_number(0.001), "0.001");
  EXPECT_EQ(prometheus_number(2560), "2560");
}

TEST(Monitor, PageHasEveryFamilyOnceWithItsType) {
  MonitorOptions o;
  o.model_name = "m";
  o.engine_stats = [] {
    engine::EngineStats s;
    s.running = 2;
    s.total_blocks = 10;
    s.free_blocks = 4;
    return s;
  };
  auto m = Monitor::open(o);
  ASSERT_TRUE(m.ok());
  auto& reg = (*m)->registry();
  reg.finished[0].add(3);
  reg.ttft.observe(0.2);
  const std::string text = (*m)->metrics_text();
  EXPECT_NE(text.find("vllm:num_requests_running{model_name=\"m\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("vllm:kv_cache_usage_perc{model_name=\"m\"} 0.6\n"), std::string::npos);
  EXPECT_NE(text.find("vllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 3\n"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:time_to_first_token_seconds_count{model_name=\"m\"} 1\n"),
            std::string::npos);
  // Unmeasured: no drafting counters without a drafter, no key families without keys.
  EXPECT_EQ(text.find("spec_decode"), std::string::npos);
  EXPECT_EQ(text.find("api_key"), std::string::npos);
  // Drafting counters appear once the engine has drafted.
  auto drafted = Monitor::open([] {
    MonitorOptions d;
    d.model_name = "m";
    d.engine_stats = [] {
      engine::EngineStats s;
      s.drafts = 2;
      s.draft_tokens = 8;
      s.accepted_tokens = 5;
      return s;
    };
    return d;
  }());
  ASSERT_TRUE(drafted.ok());
  EXPECT_NE((*drafted)->metrics_text().find(
                "vllm:spec_decode_num_accepted_tokens_total{model_name=\"m\"} 5\n"),
            std::string::npos);
  // Every TYPE line names a distinct family.
  std::set<std::string> seen;
  for (size_t at = text.find("# TYPE "); at != std::string::npos;
       at = text.find("# TYPE ", at + 1)) {
    std::string name = text.substr(at + 7, text.find(' ', at + 7) - at - 7);
    EXPECT_TRUE(seen.insert(name).second) << name;
  }
}

}  // namespace
}  // namespace tf::server
