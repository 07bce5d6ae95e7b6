// The tiny real model the engine suites run on (../shared/models/stories260K.gguf, DATA.md), loaded
// once per suite: null where the file is absent (the suite skips), a failure where it does not load.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "checkpoint/checkpoint.h"
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

}  // namespace tf::testing
