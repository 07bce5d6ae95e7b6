// The streaming driver: a loop over the unresolved text that emits what is certain and keeps the
// rest. Every verdict depends only on the text so far and never changes when more arrives, which
// is what makes any split of a reply parse the same as the whole reply.
#include "chat/output/stream_parser.h"

#include <algorithm>

#include "chat/output/syntax_util.h"

namespace tf::chat::output {
namespace {

constexpr std::string_view kThinkOpenTag = "<think>";
constexpr std::string_view kThinkCloseTag = "</think>";

OutputEvent make_event(OutputEvent::Kind kind, std::string text, int index = -1) {
  OutputEvent e;
  e.kind = kind;
  e.text = std::move(text);
  e.index = index;
  return e;
}

// Length of the longest proper prefix of `marker` that `s` ends with.
size_t partial_suffix(std::string_view s, std::string_view marker) {
  for (size_t k = std::min(marker.size() - 1, s.size()); k > 0; --k) {
    if (s.substr(s.size() - k) == marker.substr(0, k)) return k;
  }
  return 0;
}

}  // namespace

StreamParser::StreamParser(std::unique_ptr<CallSyntax> syntax, bool think, ParserOptions options)
    : syntax_(std::move(syntax)),
      think_(think && options.parse_reasoning),
      options_(std::move(options)),
      table_(options_.tools),
      rng_(std::random_device{}()) {
  if (options_.tools.empty()) syntax_.reset();
  if (think_ && options_.start_in_reasoning) {
    mode_ = Mode::kReasoning;
    think_seen_ = true;
  }
}

std::vector<OutputEvent> StreamParser::push(std::string_view text) {
  buf_.append(text);
  drain(false);
  return std::exchange(out_, {});
}

std::vector<OutputEvent> StreamParser::finish() {
  drain(true);
  return std::exchange(out_, {});
}

void StreamParser::drain(bool final) {
  for (;;) {
    bool more = mode_ == Mode::kContent     ? step_content(final)
                : mode_ == Mode::kReasoning ? step_reasoning(final)
                                            : step_held(final);
    if (!more) break;
  }
  buf_.erase(0, pos_);
  held_scan_ = held_scan_ > pos_ ? held_scan_ - pos_ : 0;
  pos_ = 0;
}

StreamParser::Found StreamParser::find_marker(bool reasoning) const {
  Found best;
  std::string_view s(buf_);
  auto consider = [&](size_t at, int marker) {
    if (at != std::string::npos && at < best.pos) best = {at, marker};
  };
  if (think_ && reasoning) consider(s.find(kThinkCloseTag, pos_), kThinkClose);
  if (think_ && !reasoning && !think_seen_) consider(s.find(kThinkOpenTag, pos_), kThinkOpen);
  if (!syntax_) return best;
  const auto& markers = syntax_->markers();
  for (size_t m = 0; m < markers.size(); ++m) {
    const Marker& mk = markers[m];
    if (!mk.only_at_reply_start) {
      consider(s.find(mk.text, pos_), static_cast<int>(m));
    } else if (!reasoning && !content_started_) {
      size_t at = skip_space(s, pos_);
      if (s.substr(at, mk.text.size()) == mk.text) consider(at, static_cast<int>(m));
    }
  }
  return best;
}

size_t StreamParser::hold_back(bool reasoning) const {
  std::string_view rest = std::string_view(buf_).substr(pos_);
  size_t hold = 0;
  if (think_ && reasoning) hold = std::max(hold, partial_suffix(rest, kThinkCloseTag));
  if (think_ && !reasoning && !think_seen_) {
    hold = std::max(hold, partial_suffix(rest, kThinkOpenTag));
  }
  if (!syntax_) return hold;
  for (const Marker& mk : syntax_->markers()) {
    if (!mk.only_at_reply_start) {
      hold = std::max(hold, partial_suffix(rest, mk.text));
    } else if (!reasoning && !content_started_) {
      size_t at = skip_space(rest, 0);
      if (at < rest.size() && mk.text.starts_with(rest.substr(at))) {
        hold = std::max(hold, rest.size() - at);
      }
    }
  }
  return hold;
}

bool StreamParser::step_content(bool final) {
  Found f = find_marker(false);
  if (f.pos == std::string::npos) {
    size_t end = buf_.size();
    if (!final) end = std::max(pos_, utf8_safe_end(buf_, end - hold_back(false)));
    emit_text(OutputEvent::Kind::kContent, pos_, end);
    pos_ = end;
    return false;
  }
  emit_text(OutputEvent::Kind::kContent, pos_, f.pos);
  pos_ = f.pos;
  if (f.marker == kThinkOpen) {
    think_seen_ = true;
    pos_ += kThinkOpenTag.size();
    mode_ = Mode::kReasoning;
    return true;
  }
  size_t marker_len = syntax_->markers()[f.marker].text.size();
  CallMatch m = syntax_->match(std::string_view(buf_).substr(pos_), f.marker, final, table_, memo_);
  if (m.status == CallMatch::Status::kNeedMore && !final) return false;
  memo_.clear();
  if (m.status != CallMatch::Status::kMatch) {
    emit_text(OutputEvent::Kind::kContent, pos_, pos_ + marker_len);
    pos_ += marker_len;
    return true;
  }
  emit_calls(m.calls);
  pos_ += m.end;
  return true;
}

bool StreamParser::step_reasoning(bool final) {
  Found f = find_marker(true);
  if (f.pos == std::string::npos) {
    size_t end = buf_.size();
    if (!final) end = std::max(pos_, utf8_safe_end(buf_, end - hold_back(true)));
    emit_text(OutputEvent::Kind::kReasoning, pos_, end);
    pos_ = end;
    return false;
  }
  emit_text(OutputEvent::Kind::kReasoning, pos_, f.pos);
  pos_ = f.pos;
  if (f.marker == kThinkClose) {
    pos_ += kThinkCloseTag.size();
    mode_ = Mode::kContent;
    return true;
  }
  size_t marker_len = syntax_->markers()[f.marker].text.size();
  CallMatch m = syntax_->match(std::string_view(buf_).substr(pos_), f.marker, final, table_, memo_);
  if (m.status == CallMatch::Status::kNeedMore && !final) return false;
  memo_.clear();
  if (m.status != CallMatch::Status::kMatch) {
    emit_text(OutputEvent::Kind::kReasoning, pos_, pos_ + marker_len);
    pos_ += marker_len;
    return true;
  }
  if (final) {
    emit_calls(m.calls);
    pos_ += m.end;
    return true;
  }
  // A whole call inside the think block: it is the reply's call only if the block never closes,
  // so everything from here waits for </think> or the end of the reply.
  mode_ = Mode::kReasoningHeld;
  held_scan_ = pos_ + m.end;
  return true;
}

bool StreamParser::step_held(bool final) {
  size_t close = buf_.find(kThinkCloseTag, held_scan_);
  if (close != std::string::npos) {
    emit_text(OutputEvent::Kind::kReasoning, pos_, close);
    pos_ = close + kThinkCloseTag.size();
    mode_ = Mode::kContent;
    return true;
  }
  if (!final) {
    size_t tail = kThinkCloseTag.size() - 1;
    held_scan_ = std::max(held_scan_, buf_.size() > tail ? buf_.size() - tail : 0);
    return false;
  }
  mode_ = Mode::kReasoning;  // the block never closed: parse it again, its calls now count
  return true;
}

void StreamParser::emit_text(OutputEvent::Kind kind, size_t begin, size_t end) {
  if (end <= begin) return;
  std::string_view piece = std::string_view(buf_).substr(begin, end - begin);
  if (kind == OutputEvent::Kind::kContent && !trim_space(piece).empty()) content_started_ = true;
  if (!out_.empty() && out_.back().kind == kind) {
    out_.back().text.append(piece);
    return;
  }
  out_.push_back(make_event(kind, std::string(piece)));
}

void StreamParser::emit_calls(std::vector<ParsedCall>& calls) {
  content_started_ = true;
  for (ParsedCall& c : calls) {
    int index = next_index_++;
    OutputEvent begin = make_event(OutputEvent::Kind::kToolCallBegin, "", index);
    begin.id = c.id.empty() ? new_id() : std::move(c.id);
    begin.name = std::move(c.name);
    out_.push_back(std::move(begin));
    out_.push_back(
        make_event(OutputEvent::Kind::kToolCallArguments, std::move(c.arguments), index));
    out_.push_back(make_event(OutputEvent::Kind::kToolCallEnd, "", index));
  }
}

std::string StreamParser::new_id() {
  if (options_.make_id) return options_.make_id();
  static constexpr std::string_view kAlnum =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::uniform_int_distribution<size_t> pick(0, kAlnum.size() - 1);
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlnum[pick(rng_)];
  return id;
}

}  // namespace tf::chat::output
