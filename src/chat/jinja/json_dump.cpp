// json.dumps(ensure_ascii=False) for Values. Strings escape only '"', '\\' and control characters;
// floats use Python's repr; NaN/Infinity are spelled the way Python does.
#include "chat/jinja/json_dump.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tf::chat::jinja {
namespace {

class Dumper {
 public:
  static constexpr int kMaxLevel = 1024;

  explicit Dumper(const JsonDumpOptions& o) : o_(o) {
    item_sep_ = o.item_separator.value_or(o.indent ? "," : ", ");
    key_sep_ = o.key_separator.value_or(": ");
  }

  void dump(const Value& v, int level) {
    if (out.size() > o_.max_bytes) {
      throw TemplateLimit(fmt::format("template output exceeded the limit of {} bytes", o_.max_bytes));
    }
    // Values are already bounded by Limits::max_value_depth where they are built; this is the
    // backstop for the recursion here.
    if (level > kMaxLevel) throw JinjaError("tojson: value nested too deeply");
    switch (v.type()) {
      case Value::Type::kNone:
        out += "null";
        break;
      case Value::Type::kBool:
        out += v.as_bool() ? "true" : "false";
        break;
      case Value::Type::kInt:
        out += std::to_string(v.as_int());
        break;
      case Value::Type::kFloat: {
        double d = v.as_float();
        if (std::isnan(d)) {
          out += "NaN";
        } else if (std::isinf(d)) {
          out += d > 0 ? "Infinity" : "-Infinity";
        } else {
          out += float_repr(d);
        }
        break;
      }
      case Value::Type::kString:
        string(v.as_string());
        break;
      case Value::Type::kList: {
        const auto& items = v.as_list().items;
        if (items.empty()) {
          out += "[]";
          break;
        }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_sep_;
          newline(level + 1);
          dump(items[i], level + 1);
        }
        newline(level);
        out += ']';
        break;
      }
      case Value::Type::kDict: {
        if (v.as_dict().is_namespace)
          throw JinjaError("Object of type Namespace is not JSON serializable");
        std::vector<const std::pair<Value, Value>*> items;
        for (const auto& kv : v.as_dict().items) items.push_back(&kv);
        if (items.empty()) {
          out += "{}";
          break;
        }
        if (o_.sort_keys) {
          std::stable_sort(items.begin(), items.end(), [](const auto* a, const auto* b) {
            return value_less(a->first, b->first);
          });
        }
        out += '{';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_sep_;
          newline(level + 1);
          key(items[i]->first);
          out += key_sep_;
          dump(items[i]->second, level + 1);
        }
        newline(level);
        out += '}';
        break;
      }
      case Value::Type::kUndefined:
        throw JinjaError("Object of type Undefined is not JSON serializable");
      case Value::Type::kCallable:
        throw JinjaError("Object of type function is not JSON serializable");
    }
  }

  std::string out;

 private:
  void newline(int level) {
    if (!o_.indent) return;
    out += '\n';
    for (int i = 0; i < level; ++i) out += *o_.indent;
  }

  void key(const Value& k) {
    // Python converts non-string keys: True → "true", 1 → "1", None → "null".
    if (k.is_string()) return string(k.as_string());
    if (k.is_none()) return string("null");
    if (k.is_bool()) return string(k.as_bool() ? "true" : "false");
    if (k.is_int() || k.is_float())
      return string(k.is_int() ? std::to_string(k.as_int()) : float_repr(k.as_float()));
    throw JinjaError("keys must be str, int, float, bool or None, not " + k.type_name());
  }

  void string(const std::string& s) {
    out += '"';
    for (unsigned char c : s) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04x", c);
            out += buf;
          } else {
            out += static_cast<char>(c);
          }
      }
    }
    out += '"';
  }

  const JsonDumpOptions& o_;
  std::string item_sep_;
  std::string key_sep_;
};

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  Dumper d(options);
  d.dump(v, 0);
  return std::move(d.out);
}

}  // namespace tf::chat::jinja
