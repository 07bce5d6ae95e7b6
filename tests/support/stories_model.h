// The tiny real model the engine suites run on (../shared/models/stories260K.gguf, DATA.md), loaded
// once per suite: null where the file is absent (the suite skips), a failure where it does not load.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "checkpoint/checkpoint.h"
#include "engine/engine.h"
#include "model/model.h"
#include "support/paths.h"

namespace tf::testing {

inline constexpr const char* kStoriesMissing =
    "missing ../shared/models/stories260K.gguf (see DATA.md)";

inline std::shared_ptr<model::Model> load_stories260k() {
  const std::string path = shared_path("models/stories260K.gguf");
  if (!std::filesystem::exists(path)) return nullptr;
  auto ckpt = checkpoint::Checkpoint::open(path);
  EXPECT_TRUE(ckpt.ok()) << ckpt.error().message;
  if (!ckpt.ok()) return nullptr;
  auto m = model::load_model(*ckpt, {2});
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? std::shared_ptr<model::Model>(std::move(*m)) : nullptr;
}

// A suite on the stories model: loaded once per suite, every test skipped where it is absent.
class StoriesSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = load_stories260k(); }
  static void TearDownTestSuite() { model_.reset(); }
  void SetUp() override {
    if (!model_) GTEST_SKIP() << kStoriesMissing;
  }
  // What the suites' engines start from: the model's end-of-text id and a 64 MiB pool.
  static engine::EngineOptions stories_options() {
    engine::EngineOptions o;
    o.eog_ids = {2};
    o.kv_budget_bytes = int64_t{64} << 20;
    return o;
  }
  static inline std::shared_ptr<model::Model> model_;
};

}  // namespace tf::testing
