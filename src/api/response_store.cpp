// ResponseStore: an insertion-ordered map with count and byte budgets.
#include "api/response_store.h"

#include "api/json_util.h"

namespace tf::api {

size_t StoredResponse::bytes() const {
  return id.size() + dump(response).size() + dump(input_items).size() + dump(messages).size() +
         dump(tools).size() + token_ids.size() * sizeof(int32_t);
}

ResponseStore::ResponseStore(size_t max_count, size_t max_bytes)
    : max_count_(max_count), max_bytes_(max_bytes) {}

void ResponseStore::erase_locked(List::iterator it) {
  bytes_ -= it->bytes;
  by_id_.erase(it->response->id);
  order_.erase(it);
}

void ResponseStore::put(std::shared_ptr<const StoredResponse> r) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = by_id_.find(r->id); it != by_id_.end()) erase_locked(it->second);
  const size_t n = r->bytes();
  bytes_ += n;
  order_.push_back({std::move(r), n});
  by_id_[order_.back().response->id] = std::prev(order_.end());
  // The newest always stays, even when it alone is over the byte budget.
  while (order_.size() > 1 && (order_.size() > max_count_ || bytes_ > max_bytes_)) {
    erase_locked(order_.begin());
  }
}

std::shared_ptr<const StoredResponse> ResponseStore::get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second->response;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return false;
  erase_locked(it->second);
  return true;
}

size_t ResponseStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return order_.size();
}

size_t ResponseStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace tf::api
