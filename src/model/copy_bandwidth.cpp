// Model::copy_bandwidth's default: the host memory's copy rate, on the model's own threads.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "base/thread_pool.h"
#include "model/model.h"

namespace tf::model {

double Model::copy_bandwidth() {
  using Clock = std::chrono::steady_clock;
  const size_t bytes = size_t{256} << 20;
  std::vector<char> from(bytes, 1), to(bytes, 0);  // touched, so no copy pays for first faults
  ThreadPool* pool = host_pool();
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = Clock::now();
    auto copy = [&](size_t lo, size_t hi) {
      std::memcpy(to.data() + lo, from.data() + lo, hi - lo);
    };
    if (pool != nullptr) {
      pool->parallel_for(bytes, size_t{1} << 20, copy);
    } else {
      copy(0, bytes);
    }
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, 2.0 * static_cast<double>(bytes) / s);
  }
  return best;
}

}  // namespace tf::model
