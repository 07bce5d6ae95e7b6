// Key files, digests and the constant-time lookup.
#include "server/api_keys.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <fstream>
#include <sstream>

namespace tf::server {

Digest sha256(std::string_view data) {
  Digest d{};
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), d.data(), &n, EVP_sha256(), nullptr);
  return d;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::string short_name(const Digest& d) {
  return fmt::format("sha256:{:02x}{:02x}{:02x}{:02x}", d[0], d[1], d[2], d[3]);
}

bool same(const Digest& a, const Digest& b) {
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

Result<std::vector<KeyEntry>> parse_key_file(std::string_view text, std::string_view path) {
  std::vector<KeyEntry> out;
  int line_no = 0;
  while (!text.empty()) {
    const size_t nl = std::min(text.find('\n'), text.size());
    std::string_view line = trim(text.substr(0, nl));
    text.remove_prefix(std::min(nl + 1, text.size()));
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    std::string name;
    std::string_view key = line;
    if (size_t colon = line.find(':'); colon != std::string_view::npos) {
      name = std::string(trim(line.substr(0, colon)));
      key = trim(line.substr(colon + 1));
      if (name.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "{}:{}: empty key name before ':'", path,
                          line_no);
      }
    }
    if (key.empty()) {
      return make_error(ErrorCode::kInvalidArgument, "{}:{}: empty key", path, line_no);
    }
    KeyEntry e{std::move(name), sha256(key)};
    if (e.name.empty()) e.name = short_name(e.digest);
    out.push_back(std::move(e));
  }
  return out;
}

ApiKeys::ApiKeys(const std::vector<std::string>& plain, std::string file) : file_(std::move(file)) {
  for (const auto& k : plain) plain_.push_back({"default", sha256(k)});
  set_ = std::make_shared<const Set>(plain_);
}

std::shared_ptr<const ApiKeys::Set> ApiKeys::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return set_;
}

bool ApiKeys::required() const { return !current()->empty(); }

std::optional<std::string> ApiKeys::identify(std::string_view presented) const {
  const auto set = current();
  const Digest d = sha256(presented);
  const KeyEntry* found = nullptr;
  for (const auto& e : *set) {
    if (same(d, e.digest) && !found) found = &e;  // no early exit
  }
  if (!found) return std::nullopt;
  return found->name;
}

Result<size_t> ApiKeys::reload() {
  auto next = std::make_shared<Set>(plain_);
  if (!file_.empty()) {
    std::ifstream in(file_, std::ios::binary);
    if (!in) return make_error(ErrorCode::kIo, "cannot read the API key file {}", file_);
    std::stringstream ss;
    ss << in.rdbuf();
    auto entries = parse_key_file(ss.str(), file_);
    if (!entries) return entries.error();
    if (entries->empty()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: no keys (an empty file would let "
                        "every request in)",
                        file_);
    }
    next->insert(next->end(), entries->begin(), entries->end());
  }
  const size_t n = next->size();
  std::lock_guard<std::mutex> lock(mu_);
  set_ = std::move(next);
  return n;
}

}  // namespace tf::server
