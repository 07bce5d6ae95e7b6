// Where tensor-parallel ranks' partial results meet: the all-reduce after each row-parallel
// projection and the gather of the vocabulary-parallel logits, always summed in rank order, so a
// given world size gives the same bits run to run and whatever the ranks' timing.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "base/result.h"

namespace tf::model {

class RankExchange {
 public:
  virtual ~RankExchange() = default;
  virtual int world() const = 0;
  // buf[count] (written on s) becomes the sum of every rank's buf, rank 0's first; queued on s.
  virtual Status all_reduce(int rank, float* buf, size_t count, cudaStream_t s) = 0;
  // out[rows, world * cols] = the ranks' part[rows, cols] side by side in rank order; on s.
  virtual Status all_gather(int rank, const float* part, size_t rows, size_t cols, float* out,
                            cudaStream_t s) = 0;
  // A rank failed: every call waiting or still to come returns an error naming `why`, so no
  // rank waits for it forever.
  virtual void abort(const std::string& why) = 0;
};

// Ranks as threads of one process on one device (each with its own stream): the exchanges read
// the other ranks' buffers directly, once their events say the parts are written, and the ranks'
// host threads meet at each one. Checks the sharded kernels without a second GPU.
std::unique_ptr<RankExchange> make_thread_exchange(int world);

}  // namespace tf::model
