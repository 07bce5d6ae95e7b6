// The JSONL request log (--request-log FILE): one line per answered request, appended and flushed
// as each request ends, so `tail -f` and log shippers see it at once.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/result.h"

namespace tf::server {

class RequestLog {
 public:
  static Result<std::unique_ptr<RequestLog>> open(const std::string& path);
  ~RequestLog();
  void write(std::string_view json_line);

 private:
  explicit RequestLog(std::FILE* f) : f_(f) {}
  std::mutex mu_;
  std::FILE* f_;
};

}  // namespace tf::server
