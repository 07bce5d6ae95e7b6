// The API keys a server accepts: from --api-key (named "default") and from a key file of
// `name:key` or `key` lines, held only as SHA-256 digests. reload() rereads the file (on SIGHUP)
// and swaps the set at once, so requests in flight and open streams are unaffected.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tf::server {

using Digest = std::array<unsigned char, 32>;

Digest sha256(std::string_view data);

struct KeyEntry {
  std::string name;  // from `name:key`; else "sha256:" and the digest's first 8 hex digits
  Digest digest;
};

// A key file's entries; '#' lines and blank lines are skipped. Errors name the line.
Result<std::vector<KeyEntry>> parse_key_file(std::string_view text, std::string_view path);

class ApiKeys {
 public:
  // `plain`: keys given on the command line, active at once; `file`: a key file's path (empty:
  // none), read by reload().
  explicit ApiKeys(const std::vector<std::string>& plain = {}, std::string file = {});

  // Whether any key is configured (no key: every request is let in).
  bool required() const;
  // The name of the key `presented` is, or nullopt. Compares every digest in constant time.
  std::optional<std::string> identify(std::string_view presented) const;
  // Rereads the key file; on error the old keys stay. Returns how many keys are now active.
  Result<size_t> reload();
  const std::string& file() const { return file_; }

 private:
  using Set = std::vector<KeyEntry>;
  std::shared_ptr<const Set> current() const;

  std::vector<KeyEntry> plain_;
  std::string file_;
  mutable std::mutex mu_;
  std::shared_ptr<const Set> set_ = std::make_shared<const Set>();
};

}  // namespace tf::server
