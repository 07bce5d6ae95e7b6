// What the API layer needs from an engine: submit, cancel, and the context limit. The real Engine
// implements it; tests substitute a scripted engine that replays given tokens.
#pragma once

#include <cstdint>
#include <memory>

#include "base/result.h"
#include "engine/channel.h"
#include "engine/request.h"

namespace tf::engine {

class EngineClient {
 public:
  virtual ~EngineClient() = default;
  virtual Result<std::shared_ptr<Channel>> submit(Request request) = 0;
  virtual void cancel(RequestId id) = 0;
  virtual int64_t context() const = 0;
};

}  // namespace tf::engine
