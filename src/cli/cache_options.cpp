// Prompt cache flags for `serve`.
#include "cli/cache_options.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engine/kv_key.h"

namespace tf::cli {
namespace {

int64_t available_ram() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

uint64_t digest_file(const std::filesystem::path& p, uint64_t h) {
  std::ifstream in(p, std::ios::binary);
  const auto size = static_cast<int64_t>(std::filesystem::file_size(p));
  std::vector<char> buf(1 << 20);
  auto mix = [&](int64_t offset) {
    in.seekg(offset);
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const uint64_t part = engine::checksum64(buf.data(), static_cast<size_t>(in.gcount()));
    in.clear();
    h = engine::checksum64(&part, sizeof part) ^ (h * 0x9E3779B97F4A7C15ull);
  };
  h ^= static_cast<uint64_t>(size);
  mix(0);
  mix(std::max<int64_t>(0, size - static_cast<int64_t>(buf.size())));
  return h;
}

}  // namespace

void add_cache_options(CLI::App& cmd, CacheArgs& a) {
  cmd.add_option("--prompt-cache-gib", a.host_gib,
                 "Host RAM for KV blocks evicted from the pool, pinned on CUDA (default: a "
                 "tenth of free RAM, up to 8 GiB; 0: off)")
      ->check(CLI::Range(0.0, 65536.0));
  cmd.add_option("--prompt-cache-dir", a.dir,
                 "Directory for the disk tier of the prompt cache (private, 0700; default: off)");
  cmd.add_option("--prompt-cache-disk-gib", a.disk_gib, "Disk budget of the prompt cache")
      ->check(CLI::Range(0.001, 1048576.0));
  cmd.add_option("--prefill-next-turn", a.prefill_next_turn,
                 "After a reply (Chat Completions, Responses, Messages), prefill its follow-up's "
                 "start (the history as the next request renders it) while the engine is idle: "
                 "on (default) or off")
      ->check(CLI::IsMember({"on", "off"}));
}

std::string checkpoint_identity(const checkpoint::Checkpoint& ckpt) {
  uint64_t h = 0;
  std::error_code ec;
  if (!ckpt.dir().empty()) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(ckpt.dir(), ec)) {
      const auto ext = e.path().extension();
      if (ext == ".safetensors" || e.path().filename() == "config.json") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) h = digest_file(f, h);
  } else {
    h = digest_file(ckpt.path(), h);
  }
  return fmt::format("{:016x}", h);
}

Status apply_cache_options(const CacheArgs& a, bool /*kv_in_host_memory*/,
                           const checkpoint::Checkpoint& ckpt, engine::EngineOptions& eo) {
  eo.weights_id = checkpoint_identity(ckpt);
  const double gib = a.host_gib.value_or(
      std::min(8.0, static_cast<double>(available_ram()) / 10 / (int64_t{1} << 30)));
  eo.tiers.host_bytes = static_cast<int64_t>(gib * (int64_t{1} << 30));
  eo.tiers.disk_dir = a.dir;
  eo.tiers.disk_bytes = static_cast<int64_t>(a.disk_gib * (int64_t{1} << 30));
  return {};
}

}  // namespace tf::cli
