// The Responses API's store: finished responses kept for GET, input_items and previous_response_id
// chains, newest first, within a count and a byte budget (the oldest is evicted first). Each keeps
// the exact token ids of its prompt and output, so a continuation resumes from the prompt cache.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace tf::api {

struct StoredResponse {
  std::string id;
  nlohmann::ordered_json response;     // the response object as GET returns it
  nlohmann::ordered_json input_items;  // this turn's input items, with their ids
  // The whole conversation so far in the canonical chat shape (earlier turns, this input, then
  // this reply's messages), and the tools it was rendered with.
  nlohmann::ordered_json messages;
  nlohmann::ordered_json tools;
  std::vector<int32_t> token_ids;  // prompt then output, exactly as the engine saw them
  size_t bytes() const;
};

class ResponseStore {
 public:
  static constexpr size_t kMaxCount = 1024;
  static constexpr size_t kMaxBytes = size_t{256} << 20;

  explicit ResponseStore(size_t max_count = kMaxCount, size_t max_bytes = kMaxBytes);
  // Stores (or replaces) a response, evicting the oldest past either limit.
  void put(std::shared_ptr<const StoredResponse> r);
  std::shared_ptr<const StoredResponse> get(const std::string& id) const;
  bool erase(const std::string& id);
  size_t size() const;
  size_t bytes() const;

 private:
  struct Entry {
    std::shared_ptr<const StoredResponse> response;
    size_t bytes = 0;  // measured once, at put
  };
  using List = std::list<Entry>;
  void erase_locked(List::iterator it);

  const size_t max_count_, max_bytes_;
  mutable std::mutex mu_;
  List order_;  // oldest first
  std::unordered_map<std::string, List::iterator> by_id_;
  size_t bytes_ = 0;
};

}  // namespace tf::api
