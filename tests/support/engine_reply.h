// A request's whole reply read off its engine channel: tokens, logprobs, how it ended and its
// usage (shared by the engine suites).
#pragma once

#include <string>
#include <vector>

#include "engine/channel.h"
#include "engine/request.h"

namespace tf::test {

using engine::Channel;
using engine::FinishReason;
using engine::Finished;
using engine::Tokens;
using engine::Usage;

struct Reply {
  std::vector<int32_t> ids;
  std::vector<float> logprobs;
  FinishReason reason = FinishReason::kError;
  std::string error;
  Usage usage;
};

inline Reply collect(Channel& ch) {
  Reply r;
  while (auto ev = ch.pop()) {
    if (auto* t = std::get_if<Tokens>(&*ev)) {
      r.ids.insert(r.ids.end(), t->ids.begin(), t->ids.end());
      for (const auto& lp : t->logprobs) r.logprobs.push_back(lp.logprob);
    } else if (auto* f = std::get_if<Finished>(&*ev)) {
      r.reason = f->reason;
      r.usage = f->usage;
      if (f->error) r.error = f->error->message;
    }
  }
  return r;
}

}  // namespace tf::test
