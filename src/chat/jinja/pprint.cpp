// Python's PrettyPrinter._format and its dispatch for dict, list, tuple and str (see pprint.h).
#include "chat/jinja/pprint.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/jinja/py_text.h"

namespace tf::chat::jinja {
namespace {

constexpr size_t kWidth = 80;

// Python's len() of a repr: code points, not bytes.
size_t width_of(std::string_view s) { return utf8_length(s); }

// The sorted items of a dict, as pprint's _safe_key orders them: by key, falling back to the type
// name where keys cannot be compared.
std::vector<const std::pair<Value, Value>*> sorted_items(const Dict& d) {
  std::vector<const std::pair<Value, Value>*> items;
  for (const auto& kv : d.items) items.push_back(&kv);
  std::stable_sort(items.begin(), items.end(), [](const auto* a, const auto* b) {
    try {
      return value_less(a->first, b->first);
    } catch (const JinjaError&) {
      return a->first.type_name() < b->first.type_name();
    }
  });
  return items;
}

// repr() with dicts sorted, as pprint's _safe_repr writes the one-line form, appended to `out`
// and abandoned once `out` passes `cap` bytes: the printer only needs to know whether a value
// fits its line, and a whole repr at every level of a deep value would cost its size per level.
void safe_repr(const Value& v, std::string& out, size_t cap) {
  if (out.size() > cap) return;
  if (v.is_list()) {
    const List& l = v.as_list();
    out += l.is_tuple ? "(" : "[";
    for (size_t i = 0; i < l.items.size() && out.size() <= cap; ++i) {
      if (i) out += ", ";
      safe_repr(l.items[i], out, cap);
    }
    if (l.is_tuple && l.items.size() == 1) out += ",";
    out += l.is_tuple ? ")" : "]";
    return;
  }
  if (v.is_dict() && !v.as_dict().is_namespace) {
    out += "{";
    bool first = true;
    for (const auto* kv : sorted_items(v.as_dict())) {
      if (out.size() > cap) break;
      if (!first) out += ", ";
      first = false;
      safe_repr(kv->first, out, cap);
      out += ": ";
      safe_repr(kv->second, out, cap);
    }
    out += "}";
    return;
  }
  if (v.is_string() && v.as_string().size() > cap) {
    out += Value(v.as_string().substr(0, cap + 1)).repr();  // already too wide to print
    return;
  }
  out += v.repr();
}

std::string safe_repr(const Value& v) {
  std::string out;
  safe_repr(v, out, SIZE_MAX);
  return out;
}

class Printer {
 public:
  std::string out;

  void format(const Value& v, size_t indent, size_t allowance, int level) {
    size_t room = kWidth > indent + allowance ? kWidth - indent - allowance : 0;
    std::string rep;
    safe_repr(v, rep, 4 * (room + 1));  // past that many bytes, more than `room` characters
    if (width_of(rep) > room) {
      if (v.is_dict() && !v.as_dict().is_namespace)
        return dict(v.as_dict(), indent, allowance, level + 1);
      if (v.is_list()) return items(v.as_list(), indent, allowance, level + 1);
      if (v.is_string()) return str(v.as_string(), indent, allowance, level + 1);
    }
    out += rep;
  }

 private:
  void newline(const char* sep, size_t indent) {
    out += sep;
    out.append(indent, ' ');
  }

  void dict(const Dict& d, size_t indent, size_t allowance, int level) {
    out += '{';
    auto items = sorted_items(d);
    indent += 1;
    for (size_t i = 0; i < items.size(); ++i) {
      bool last = i + 1 == items.size();
      std::string key = safe_repr(items[i]->first);
      out += key + ": ";
      format(items[i]->second, indent + width_of(key) + 2, last ? allowance + 1 : 1, level);
      if (!last) newline(",\n", indent);
    }
    out += '}';
  }

  void items(const List& l, size_t indent, size_t allowance, int level) {
    std::string end = !l.is_tuple ? "]" : l.items.size() == 1 ? ",)" : ")";
    out += l.is_tuple ? '(' : '[';
    allowance += end.size();
    indent += 1;
    for (size_t i = 0; i < l.items.size(); ++i) {
      bool last = i + 1 == l.items.size();
      if (i) newline(",\n", indent);
      format(l.items[i], indent, last ? allowance : 1, level);
    }
    out += end;
  }

  // Splits at whitespace into chunks that fit, each its own repr, as pprint's _pprint_str does.
  void str(const std::string& s, size_t indent, size_t allowance, int level) {
    if (s.empty()) return void(out += Value(s).repr());
    std::vector<std::string> lines = lines_keepends(s);
    if (level == 1) indent += 1, allowance += 1;
    const long max_width = static_cast<long>(kWidth) - static_cast<long>(indent);
    long max_width1 = max_width;
    std::vector<std::string> chunks;
    std::string rep;
    for (size_t i = 0; i < lines.size(); ++i) {
      rep = Value(lines[i]).repr();
      bool last_line = i + 1 == lines.size();
      if (last_line) max_width1 -= static_cast<long>(allowance);
      if (static_cast<long>(width_of(rep)) <= max_width1) {
        chunks.push_back(rep);
        continue;
      }
      std::vector<std::string> parts = word_parts(lines[i]);
      long max_width2 = max_width;
      std::string current;
      for (size_t j = 0; j < parts.size(); ++j) {
        std::string candidate = current + parts[j];
        if (j + 1 == parts.size() && last_line) max_width2 -= static_cast<long>(allowance);
        if (static_cast<long>(width_of(Value(candidate).repr())) > max_width2) {
          if (!current.empty()) chunks.push_back(Value(current).repr());
          current = parts[j];
        } else {
          current = std::move(candidate);
        }
      }
      if (!current.empty()) chunks.push_back(Value(current).repr());
    }
    if (chunks.size() == 1) return void(out += rep);
    if (level == 1) out += '(';
    for (size_t i = 0; i < chunks.size(); ++i) {
      if (i) newline("\n", indent);
      out += chunks[i];
    }
    if (level == 1) out += ')';
  }

  // str.splitlines(keepends=True).
  static std::vector<std::string> lines_keepends(std::string_view s) {
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t i = 0; i < s.size();) {
      size_t n = py_linebreak_len(s, i);
      i += n ? n : 1;
      if (n) lines.emplace_back(s.substr(start, i - start)), start = i;
    }
    if (start < s.size()) lines.emplace_back(s.substr(start));
    return lines;
  }

  // re.findall(r'\S*\s*', line) without its final empty match.
  static std::vector<std::string> word_parts(std::string_view s) {
    std::vector<std::string> parts;
    size_t i = 0;
    while (i < s.size()) {
      size_t start = i;
      while (i < s.size() && !py_space_len(s, i)) ++i;
      while (i < s.size()) {
        size_t n = py_space_len(s, i);
        if (!n) break;
        i += n;
      }
      parts.emplace_back(s.substr(start, i - start));
    }
    return parts;
  }
};

}  // namespace

std::string py_pformat(const Value& v) {
  Printer p;
  p.format(v, 0, 0, 0);
  return std::move(p.out);
}

}  // namespace tf::chat::jinja
