// A proposer for exactness tests: drafts each request's known serial reply, shifted by `offset`
// ids modulo the vocabulary (0: every draft right; any other: every draft wrong).
#pragma once

#include <map>
#include <vector>

#include "engine/draft/proposer.h"

namespace tf::test {

class ReplayProposer final : public engine::draft::Proposer {
 public:
  ReplayProposer(int offset, int vocab) : offset_(offset), vocab_(vocab) {}
  void set(engine::RequestId id, std::vector<int32_t> reply) { replies_[id] = std::move(reply); }
  void propose(const engine::Sequence& s, int k, std::vector<int32_t>& out) override {
    out.clear();
    auto it = replies_.find(s.req.id);
    if (it == replies_.end()) return;
    for (int64_t i = s.generated(); i < static_cast<int64_t>(it->second.size()) && k > 0;
         ++i, --k) {
      out.push_back((it->second[i] + offset_) % vocab_);
    }
  }

 private:
  int offset_, vocab_;
  std::map<engine::RequestId, std::vector<int32_t>> replies_;
};

}  // namespace tf::test
