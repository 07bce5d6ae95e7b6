// EncodeControl: the state one encode carries through the pipeline stages, so that a long input can
// be abandoned part way (cancellation is polled every kCheckBytes of input) and so that tests can
// count the work each stage did without timing it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace tf::tokenizer {

// Units of work, each bounded by a constant of the vocabulary: a linear pipeline does work
// proportional to the input length.
struct EncodeWork {
  uint64_t regex_calls = 0;   // pcre2_match calls
  uint64_t regex_bytes = 0;   // bytes the matcher may read: from each call's start to its end
  uint64_t utf8_checked = 0;  // bytes validated as UTF-8 before matching
  uint64_t normalized = 0;    // bytes the normalizers read
  uint64_t model_steps = 0;   // symbols created, merges tried and lattice edges probed
  uint64_t words = 0;         // pre-tokenized words handed to the model
};

class EncodeControl {
 public:
  static constexpr size_t kCheckBytes = 64 * 1024;

  // Either pointer may be null: nothing to poll, or nothing to count.
  explicit EncodeControl(const std::function<bool()>* cancelled = nullptr,
                         EncodeWork* work = nullptr)
      : cancelled_(cancelled != nullptr && *cancelled ? cancelled : nullptr), work_(work) {}

  // Records `bytes` more of the input as done; polls cancelled() whenever another kCheckBytes
  // have passed. Returns false once encoding should stop.
  bool advance(size_t bytes) {
    if (cancelled_ == nullptr || stopped_) return !stopped_;
    since_check_ += bytes;
    if (since_check_ >= kCheckBytes) {
      since_check_ = 0;
      ++polls_;
      stopped_ = (*cancelled_)();
    }
    return !stopped_;
  }
  // Polls now, whatever the byte count (before the first byte of work).
  bool poll() {
    if (cancelled_ != nullptr && !stopped_) {
      ++polls_;
      stopped_ = (*cancelled_)();
    }
    return !stopped_;
  }
  bool stopped() const { return stopped_; }
  uint64_t polls() const { return polls_; }
  // Null when not counting; stages test it once and count through it.
  EncodeWork* work() const { return work_; }

 private:
  const std::function<bool()>* cancelled_;
  EncodeWork* work_;
  size_t since_check_ = 0;
  uint64_t polls_ = 0;
  bool stopped_ = false;
};

}  // namespace tf::tokenizer
