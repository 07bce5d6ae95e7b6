// parse_json: a linear pre-scan bounds the nesting before nlohmann builds anything, so a hostile
// document is refused in O(n) time and no deep value ever exists.
#include "base/json.h"

#include <utility>
#include <vector>

namespace tf::base {

Status check_json_depth(std::string_view text, int max_depth) {
  // Brackets inside strings do not nest; a backslash escapes the next byte (enough to find the
  // closing quote: \uXXXX has no quote in it). Malformed text is left to the parser to refuse,
  // and any text the parser accepts has the depth counted here.
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return make_error(ErrorCode::kInvalidArgument,
                          "JSON nesting exceeds {} levels (at byte {})", max_depth, i);
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return {};
}

bool json_nesting_exceeds(const nlohmann::ordered_json& j, int max_depth) {
  std::vector<std::pair<const nlohmann::ordered_json*, int>> stack = {{&j, 0}};
  while (!stack.empty()) {
    auto [v, depth] = stack.back();
    stack.pop_back();
    if (!v->is_structured()) continue;
    if (depth + 1 > max_depth) return true;
    for (const auto& child : *v) stack.emplace_back(&child, depth + 1);
  }
  return false;
}

Result<nlohmann::ordered_json> parse_json(std::string_view text, int max_depth) {
  TF_RETURN_IF_ERROR(check_json_depth(text, max_depth));
  try {
    return nlohmann::ordered_json::parse(text.begin(), text.end());
  } catch (const nlohmann::ordered_json::exception& e) {
    // e.what() names the byte offset and what was expected there.
    return make_error(ErrorCode::kInvalidArgument, "invalid JSON: {}", e.what());
  }
}

}  // namespace tf::base
