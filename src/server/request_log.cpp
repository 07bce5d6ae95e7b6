// The request log's file.
#include "server/request_log.h"

#include <cerrno>
#include <cstring>
#include <memory>

namespace tf::server {

Result<std::unique_ptr<RequestLog>> RequestLog::open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) {
    return make_error(ErrorCode::kIo, "cannot open the request log {}: {}", path,
                      std::strerror(errno));
  }
  return std::unique_ptr<RequestLog>(new RequestLog(f));
}

RequestLog::~RequestLog() { std::fclose(f_); }

void RequestLog::write(std::string_view line) {
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fputc('\n', f_);
  std::fflush(f_);
}

}  // namespace tf::server
