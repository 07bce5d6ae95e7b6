// Output controls: maps a request's format and reasoning controls onto the engine request.
#include "api/output_controls.h"

namespace tf::api {

OutputControls::OutputControls(std::shared_ptr<const tokenizer::Tokenizer> tokenizer)
    : tok_(std::move(tokenizer)) {}

OutputControls::~OutputControls() = default;

ApiResult<bool> OutputControls::apply(const OutputConstraint& constraint,
                                      const ReasoningControls& reasoning,
                                      const OutputContext& /*context*/,
                                      engine::Request& /*request*/) const {
  if (constraint.kind != OutputConstraint::Kind::kNone) {
    return invalid_param(constraint.field, "'" + constraint.field +
                                               "' needs constrained decoding, which this server "
                                               "does not offer yet");
  }
  if (reasoning.max_tokens) {
    return invalid_param(reasoning.field, "'" + reasoning.field +
                                              "' (a thinking budget) is not supported yet");
  }
  return true;
}

}  // namespace tf::api
