// Page-locked host memory for the prompt cache's KV blocks, allocated so that pinning holds the
// driver's lock briefly: the pages are mapped (transparent huge pages asked for) and faulted in
// first, with no CUDA call, then registered. cudaHostAlloc does all of it under the lock, about
// 2 GB/s, and every kernel launch of the serving thread waits behind it meanwhile.
#pragma once

#include <cstddef>

namespace tf::model {

// Null when memory cannot be had or locked.
void* alloc_pinned_host(size_t bytes);
void free_pinned_host(void* p);

}  // namespace tf::model
