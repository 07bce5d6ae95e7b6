// What happens after a row's token is chosen: it is appended and sent, the reply's rules advance,
// and the row's end is decided (end-of-generation or stop id, length, context); and the final
// event a finished row sends.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/row_sampler.h"
#include "engine/sequence.h"

namespace tf::engine {

class OutputProcessor {
 public:
  OutputProcessor(std::vector<int32_t> eog_ids, int64_t context)
      : eog_ids_(std::move(eog_ids)), context_(context) {}

  // Appends the row's token and sends it (after Prefilled, the first time); returns the reason
  // the row ends with it, if it does.
  std::optional<FinishReason> append(Sequence& s, Drawn drawn) const;
  // Sends the Prefilled event (with the prompt's scores, where asked) unless it went out.
  static void send_prefilled(Sequence& s);
  // The final event of a row that ends now.
  static Finished finished(const Sequence& s, FinishReason reason, std::optional<Error> error);

 private:
  std::vector<int32_t> eog_ids_;
  int64_t context_;
};

}  // namespace tf::engine
