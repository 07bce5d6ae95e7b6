// Scanning helpers shared by the tool-call syntaxes, and the table of offered tools.
#include "chat/output/syntax_util.h"

#include <algorithm>
#include <vector>

#include "base/json.h"
#include "chat/output/call_syntax.h"

namespace tf::chat::output {

const ToolSpec* ToolTable::find(std::string_view name) const {
  for (const ToolSpec& t : tools_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const nlohmann::ordered_json* ToolTable::property(const ToolSpec& tool,
                                                  std::string_view key) const {
  const auto& params = tool.parameters;
  if (!params.is_object()) return nullptr;
  auto props = params.find("properties");
  if (props == params.end() || !props->is_object()) return nullptr;
  auto it = props->find(std::string(key));
  return it == props->end() ? nullptr : &*it;
}

size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

Scan expect(std::string_view s, size_t i, std::string_view lit) {
  size_t n = std::min(lit.size(), s.size() > i ? s.size() - i : 0);
  if (s.substr(i, n) != lit.substr(0, n)) return Scan::kInvalid;
  return n == lit.size() ? Scan::kDone : Scan::kNeedMore;
}

Scan json_span_end(std::string_view s, size_t i, size_t* end, ScanMemo* memo) {
  if (i >= s.size()) return Scan::kNeedMore;
  if (s[i] != '{' && s[i] != '[') return Scan::kInvalid;
  ScanMemo::Brackets local{i, 0, {}, false, false};
  ScanMemo::Brackets& st = memo ? memo->brackets.try_emplace(i, local).first->second : local;
  if (st.end != 0) {
    *end = st.end;
    return Scan::kDone;
  }
  for (; st.pos < s.size(); ++st.pos) {
    char c = s[st.pos];
    if (st.in_string) {
      if (st.escaped) {
        st.escaped = false;
      } else if (c == '\\') {
        st.escaped = true;
      } else if (c == '"') {
        st.in_string = false;
      }
      continue;
    }
    if (c == '"') {
      st.in_string = true;
    } else if (c == '{' || c == '[') {
      if (st.closers.size() >= static_cast<size_t>(base::kMaxJsonDepth)) return Scan::kInvalid;
      st.closers.push_back(c == '{' ? '}' : ']');
    } else if (c == '}' || c == ']') {
      if (st.closers.empty() || st.closers.back() != c) return Scan::kInvalid;
      st.closers.pop_back();
      if (st.closers.empty()) {
        st.end = st.pos + 1;
        *end = st.end;
        return Scan::kDone;
      }
    }
  }
  return Scan::kNeedMore;
}

size_t find_from(std::string_view s, std::string_view needle, size_t from, ScanMemo* memo) {
  if (!memo) return s.find(needle, from);
  ScanMemo::Search& st = memo->finds[{from, needle.data()}];
  if (st.found) return st.at;
  size_t at = s.find(needle, std::max(from, st.at));
  if (at != std::string_view::npos) {
    st = {true, at};
    return at;
  }
  // Resume where a match could still begin: a needle cut off by the end of the text so far.
  st.at = s.size() >= needle.size() ? s.size() - needle.size() + 1 : 0;
  return at;
}

std::optional<nlohmann::ordered_json> parse_json_text(std::string_view text) {
  auto parsed = base::parse_json(text);
  if (!parsed.ok()) return std::nullopt;
  return std::move(*parsed);
}

std::optional<std::string> arguments_text(const nlohmann::ordered_json& value) {
  if (value.is_object()) return dump_json(value);
  if (value.is_string()) {
    auto inner = parse_json_text(value.get_ref<const std::string&>());
    if (inner && inner->is_object()) return dump_json(*inner);
  }
  return std::nullopt;
}

std::string dump_json(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

size_t utf8_safe_end(std::string_view s, size_t end) {
  // Look back at most three bytes for the lead byte of a character that runs past `end`.
  for (size_t back = 1; back <= 3 && back <= end; ++back) {
    unsigned char c = static_cast<unsigned char>(s[end - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return len > back ? end - back : end;
  }
  return end;
}

std::string_view trim_space(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

}  // namespace tf::chat::output
