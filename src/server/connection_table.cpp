// ConnectionTable: admission against the total and per-client limits, with eviction of the
// longest-idle waiting connection instead of refusing a newcomer.
#include "server/connection_table.h"

namespace tf::server {

void ConnectionTable::unlist_waiting(Entry& e) {
  if (!e.waiting) return;
  waiting_.erase(e.in_all);
  clients_[e.address].waiting.erase(e.in_client);
  e.waiting = false;
}

std::shared_ptr<Connection> ConnectionTable::evict_front(std::list<const Connection*>& order) {
  while (!order.empty()) {
    Entry& e = entries_.at(order.front());
    unlist_waiting(e);
    e.evicted = true;
    ++evicted_;
    --clients_[e.address].open;
    if (auto c = e.conn.lock()) return c;
  }
  return nullptr;
}

bool ConnectionTable::admit(const std::shared_ptr<Connection>& c, const std::string& address,
                            std::vector<std::shared_ptr<Connection>>& evict) {
  std::lock_guard<std::mutex> lock(mu_);
  if (max_per_client_ > 0 && clients_[address].open >= max_per_client_) {
    auto victim = evict_front(clients_[address].waiting);
    if (!victim) return false;
    evict.push_back(std::move(victim));
  }
  if (static_cast<int>(entries_.size()) - evicted_ >= max_total_) {
    auto victim = evict_front(waiting_);
    if (!victim) return false;
    evict.push_back(std::move(victim));
  }
  Client& client = clients_[address];
  ++client.open;
  Entry& e = entries_[c.get()];
  e.conn = c;
  e.address = address;
  e.waiting = true;
  e.in_all = waiting_.insert(waiting_.end(), c.get());
  e.in_client = client.waiting.insert(client.waiting.end(), c.get());
  return true;
}

void ConnectionTable::set_waiting(const Connection* c, bool waiting) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(c);
  if (it == entries_.end() || it->second.evicted || it->second.waiting == waiting) return;
  Entry& e = it->second;
  if (!waiting) return unlist_waiting(e);
  e.waiting = true;
  e.in_all = waiting_.insert(waiting_.end(), c);
  e.in_client = clients_[e.address].waiting.insert(clients_[e.address].waiting.end(), c);
}

void ConnectionTable::remove(const Connection* c) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(c);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  unlist_waiting(e);
  if (e.evicted) {
    --evicted_;
  } else {
    --clients_[e.address].open;
  }
  if (clients_[e.address].open == 0 && clients_[e.address].waiting.empty())
    clients_.erase(e.address);
  entries_.erase(it);
}

std::vector<std::shared_ptr<Connection>> ConnectionTable::all() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Connection>> out;
  for (const auto& [ptr, e] : entries_) {
    if (auto c = e.conn.lock()) out.push_back(std::move(c));
  }
  return out;
}

int ConnectionTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(entries_.size());
}

}  // namespace tf::server
