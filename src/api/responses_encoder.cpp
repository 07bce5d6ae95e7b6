// ResponsesEncoder: items and events of one response.
#include "api/responses_encoder.h"

#include "api/json_util.h"

namespace tf::api {

using json = nlohmann::ordered_json;

ResponsesEncoder::ResponsesEncoder(json response, std::function<std::string(const char*)> new_id)
    : response_(std::move(response)), new_id_(std::move(new_id)) {
  response_["status"] = "in_progress";
  response_["output"] = json::array();
  response_["usage"] = nullptr;
  response_["completed_at"] = nullptr;
}

json ResponsesEncoder::event(const char* type, json fields) {
  json e = {{"type", type}, {"sequence_number", seq_++}};
  if (fields.is_object()) e.update(fields);
  return e;
}

std::vector<json> ResponsesEncoder::start() {
  std::vector<json> out;
  out.push_back(event("response.created", {{"response", response_}}));
  out.push_back(event("response.in_progress", {{"response", response_}}));
  return out;
}

std::vector<json> ResponsesEncoder::push(const Delta& d) {
  std::vector<json> out;
  for (const auto& e : d.events) push(e, out);
  return out;
}

void ResponsesEncoder::open_item(Open kind, json it, std::vector<json>& out) {
  close_item("completed", out);
  open_ = kind;
  text_.clear();
  const size_t index = response_["output"].size();
  response_["output"].push_back(it);
  out.push_back(event("response.output_item.added", {{"output_index", index}, {"item", it}}));
  if (kind == Open::kCall) return;  // a call has arguments, not content parts
  json part = kind == Open::kMessage
                  ? json{{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}
                  : json{{"type", "reasoning_text"}, {"text", ""}};
  out.push_back(event("response.content_part.added", {{"item_id", it["id"]},
                                                      {"output_index", index},
                                                      {"content_index", 0},
                                                      {"part", part}}));
}

void ResponsesEncoder::push(const CoreEvent& e, std::vector<json>& out) {
  using Kind = CoreEvent::Kind;
  const size_t index = response_["output"].size() - (open_ == Open::kNone ? 0 : 1);
  switch (e.kind) {
    case Kind::kText:
      if (open_ != Open::kMessage) {
        open_item(Open::kMessage,
                  {{"type", "message"}, {"id", new_id_("msg")}, {"status", "in_progress"},
                   {"role", "assistant"}, {"content", json::array()}},
                  out);
      }
      text_ += e.text;
      out.push_back(event("response.output_text.delta",
                          {{"item_id", item()["id"]}, {"output_index", response_["output"].size() - 1},
                           {"content_index", 0}, {"delta", e.text}, {"logprobs", json::array()}}));
      break;
    case Kind::kReasoning:
      if (open_ != Open::kReasoning) {
        open_item(Open::kReasoning,
                  {{"type", "reasoning"}, {"id", new_id_("rs")}, {"summary", json::array()},
                   {"content", json::array()}},
                  out);
      }
      text_ += e.text;
      out.push_back(event("response.reasoning.delta",
                          {{"item_id", item()["id"]}, {"output_index", response_["output"].size() - 1},
                           {"content_index", 0}, {"delta", e.text}}));
      break;
    case Kind::kToolCallStart:
      open_item(Open::kCall,
                {{"type", "function_call"}, {"id", new_id_("fc")}, {"call_id", e.id},
                 {"name", e.name}, {"arguments", ""}, {"status", "in_progress"}},
                out);
      break;
    case Kind::kToolCallArguments:
      if (open_ != Open::kCall) break;
      text_ += e.text;
      out.push_back(event("response.function_call_arguments.delta",
                          {{"item_id", item()["id"]}, {"output_index", index}, {"delta", e.text}}));
      break;
    case Kind::kToolCallEnd:
      close_item("completed", out);
      break;
  }
}

void ResponsesEncoder::close_item(const char* status, std::vector<json>& out) {
  if (open_ == Open::kNone) return;
  json& it = item();
  const size_t index = response_["output"].size() - 1;
  const json id = it["id"];
  if (open_ == Open::kCall) {
    it["arguments"] = text_;
    it["status"] = status;
    out.push_back(event("response.function_call_arguments.done",
                        {{"item_id", id}, {"output_index", index}, {"arguments", text_}}));
  } else {
    const bool message = open_ == Open::kMessage;
    json part = message ? json{{"type", "output_text"}, {"text", text_}, {"annotations", json::array()}}
                        : json{{"type", "reasoning_text"}, {"text", text_}};
    out.push_back(event(message ? "response.output_text.done" : "response.reasoning.done",
                        {{"item_id", id}, {"output_index", index}, {"content_index", 0},
                         {"text", text_}}));
    if (message) out.back()["logprobs"] = json::array();
    out.push_back(event("response.content_part.done", {{"item_id", id},
                                                       {"output_index", index},
                                                       {"content_index", 0},
                                                       {"part", part}}));
    it["content"] = json::array({part});
    if (message) it["status"] = status;
  }
  out.push_back(event("response.output_item.done", {{"output_index", index}, {"item", it}}));
  open_ = Open::kNone;
}

std::vector<json> ResponsesEncoder::finish(const Outcome& o) {
  std::vector<json> out;
  const bool length = o.reason == FinishReason::kLength;
  close_item(length ? "incomplete" : "completed", out);
  const auto& u = o.usage;
  response_["usage"] = {
      {"input_tokens", u.prompt_tokens},
      {"output_tokens", u.completion_tokens},
      {"total_tokens", u.prompt_tokens + u.completion_tokens},
      {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
      {"output_tokens_details", {{"reasoning_tokens", o.reasoning_tokens}}}};
  const char* type = "response.completed";
  if (o.error) {
    type = "response.failed";
    response_["status"] = "failed";
    response_["error"] = {{"code", o.error->code.value_or("server_error")},
                          {"message", o.error->message}};
  } else if (length) {
    type = "response.incomplete";
    response_["status"] = "incomplete";
    response_["incomplete_details"] = {{"reason", "max_output_tokens"}};
  } else {
    response_["status"] = "completed";
    response_["completed_at"] = unix_now();
  }
  out.push_back(event(type, {{"response", response_}}));
  return out;
}

}  // namespace tf::api
