// The server's table of open connections: counts per client address and a least-recently-idle
// order of the connections waiting for a request, so that at a limit the longest-idle one yields.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace tf::server {

class Connection;

class ConnectionTable {
 public:
  ConnectionTable(int max_total, int max_per_client)
      : max_total_(max_total), max_per_client_(max_per_client) {}

  // Registers a new connection from `address` (in the waiting state). At a limit the longest-idle
  // connection (the client's own for the per-client limit) is unlisted and returned in `evict`
  // for the caller to close; with none to evict the connection is refused (false).
  bool admit(const std::shared_ptr<Connection>& c, const std::string& address,
             std::vector<std::shared_ptr<Connection>>& evict);
  // Waiting connections (between requests) may be evicted; busy ones (being answered) may not.
  void set_waiting(const Connection* c, bool waiting);
  void remove(const Connection* c);
  // Every listed connection, e.g. to close the waiting ones at shutdown.
  std::vector<std::shared_ptr<Connection>> all() const;
  int size() const;

 private:
  struct Entry {
    std::weak_ptr<Connection> conn;
    std::string address;
    bool waiting = false;
    bool evicted = false;  // told to close; no longer counted against the limits
    std::list<const Connection*>::iterator in_all, in_client;
  };
  struct Client {
    int open = 0;
    std::list<const Connection*> waiting;  // oldest first
  };
  std::shared_ptr<Connection> evict_front(std::list<const Connection*>& order);
  void unlist_waiting(Entry& e);

  const int max_total_, max_per_client_;
  mutable std::mutex mu_;
  std::unordered_map<const Connection*, Entry> entries_;
  std::unordered_map<std::string, Client> clients_;
  std::list<const Connection*> waiting_;  // oldest first, all clients
  int evicted_ = 0;                       // listed but already told to close
};

}  // namespace tf::server
