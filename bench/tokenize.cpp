// bench/tokenize: encode throughput (MB/s) of one tokenizer.json over a corpus of documents, one
// JSON string per line (bench/tokenize.py makes the corpus and runs HF `tokenizers` beside it).
// Prints one line: `mb_per_s=... ids=... bytes=... docs=... threads=... seconds=...`.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  CLI::App app{"Encode throughput of a tokenizer.json over a JSON-lines corpus"};
  std::string tokenizer_path, corpus_path;
  int threads = 1, repeat = 3;
  app.add_option("tokenizer", tokenizer_path, "tokenizer.json")->required();
  app.add_option("corpus", corpus_path, "One JSON string (a document) per line")->required();
  app.add_option("--threads", threads, "Worker threads, documents shared dynamically")
      ->check(CLI::Range(1, 256));
  app.add_option("--repeat", repeat, "Timed passes; the fastest is reported")
      ->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);

  std::ifstream tin(tokenizer_path, std::ios::binary);
  if (!tin) {
    fmt::print(stderr, "error: {}: cannot read\n", tokenizer_path);
    return 1;
  }
  std::stringstream tss;
  tss << tin.rdbuf();
  auto tok = tf::tokenizer::Tokenizer::from_json(tss.str(), tokenizer_path);
  if (!tok) {
    fmt::print(stderr, "error: {}\n", tok.error().message);
    return 1;
  }
  std::vector<std::string> docs;
  size_t bytes = 0;
  std::ifstream corpus(corpus_path);
  if (!corpus) {
    fmt::print(stderr, "error: {}: cannot read\n", corpus_path);
    return 1;
  }
  for (std::string line; std::getline(corpus, line);) {
    if (line.empty()) continue;
    docs.push_back(nlohmann::json::parse(line).get<std::string>());
    bytes += docs.back().size();
  }

  // add_special=false, parse_special=true: what HF encode(s, add_special_tokens=False) does.
  double best = 1e30;
  size_t total_ids = 0;
  for (int r = 0; r < repeat; ++r) {
    std::atomic<size_t> next{0}, ids{0};
    auto work = [&] {
      size_t n = 0;
      for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < docs.size();) {
        n += (*tok)->encode(docs[i], false, true).size();
      }
      ids += n;
    };
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    total_ids = ids.load();
  }
  fmt::print("mb_per_s={:.2f} ids={} bytes={} docs={} threads={} seconds={:.3f}\n",
             bytes / best / 1e6, total_ids, bytes, docs.size(), threads, best);
  return 0;
}
