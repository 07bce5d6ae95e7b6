// Grammar IR constructors and the codepoint-class to UTF-8 byte-sequence lowering.
#include "engine/grammar/expr.h"

#include <algorithm>

namespace tf::grammar {

namespace {

ExprPtr make(Expr e) { return std::make_shared<const Expr>(std::move(e)); }

constexpr uint32_t kMaxCp = 0x10FFFF;

// Appends the byte-range sequences encoding [lo, hi], splitting the range until every position
// of the encoding is an independent byte range (the classic UTF-8 range construction).
void split_utf8(uint32_t lo, uint32_t hi, std::vector<ExprPtr>& out) {
  static constexpr uint32_t kBounds[] = {0x7F, 0x7FF, 0xFFFF};
  for (uint32_t b : kBounds) {
    if (lo <= b && b < hi) {
      split_utf8(lo, b, out);
      split_utf8(b + 1, hi, out);
      return;
    }
  }
  if (hi <= 0x7F) {
    out.push_back(byte_range(static_cast<int>(lo), static_cast<int>(hi)));
    return;
  }
  int n = hi <= 0x7FF ? 2 : hi <= 0xFFFF ? 3 : 4;
  for (int i = 1; i < n; ++i) {
    uint32_t m = (uint32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_utf8(lo, lo | m, out);
        split_utf8((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split_utf8(lo, (hi & ~m) - 1, out);
        split_utf8(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a = utf8_encode(lo), b = utf8_encode(hi);
  std::vector<ExprPtr> parts;
  for (size_t i = 0; i < a.size(); ++i) {
    parts.push_back(byte_range(static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i])));
  }
  out.push_back(seq(std::move(parts)));
}

}  // namespace

ExprPtr empty_expr() { return make(Expr{}); }

ExprPtr lit(std::string bytes) {
  Expr e;
  e.kind = bytes.empty() ? Expr::Kind::kEmpty : Expr::Kind::kBytes;
  e.bytes = std::move(bytes);
  return make(std::move(e));
}

ExprPtr byte_set(const ByteSet& set) {
  Expr e;
  e.kind = Expr::Kind::kSet;
  e.set = set;
  return make(std::move(e));
}

ExprPtr byte_range(int lo, int hi) {
  ByteSet s;
  s.add(lo, hi);
  return byte_set(s);
}

ExprPtr seq(std::vector<ExprPtr> items) {
  if (items.empty()) return empty_expr();
  if (items.size() == 1) return items[0];
  Expr e;
  e.kind = Expr::Kind::kSeq;
  e.items = std::move(items);
  return make(std::move(e));
}

ExprPtr alt(std::vector<ExprPtr> items) {
  if (items.size() == 1) return items[0];
  Expr e;
  e.kind = Expr::Kind::kAlt;  // no alternatives: matches nothing
  e.items = std::move(items);
  return make(std::move(e));
}

ExprPtr repeat(ExprPtr item, int min, int max) {
  if (min == 1 && max == 1) return item;
  Expr e;
  e.kind = Expr::Kind::kRepeat;
  e.items = {std::move(item)};
  e.min = min;
  e.max = max;
  return make(std::move(e));
}

ExprPtr ref(int rule) {
  Expr e;
  e.kind = Expr::Kind::kRef;
  e.rule = rule;
  return make(std::move(e));
}

ExprPtr object_expr(ObjectShape shape) {
  Expr e;
  e.kind = Expr::Kind::kObject;
  e.object = std::make_shared<const ObjectShape>(std::move(shape));
  return make(std::move(e));
}

std::vector<CpRange> normalize(std::vector<CpRange> ranges) {
  std::vector<CpRange> split;
  for (CpRange r : ranges) {
    if (r.lo > r.hi || r.lo > kMaxCp) continue;
    r.hi = std::min(r.hi, kMaxCp);
    if (r.lo < 0xD800 && r.hi >= 0xD800) {
      split.push_back({r.lo, 0xD7FF});
      if (r.hi > 0xDFFF) split.push_back({0xE000, r.hi});
    } else if (r.lo >= 0xD800 && r.lo <= 0xDFFF) {
      if (r.hi > 0xDFFF) split.push_back({0xE000, r.hi});
    } else {
      split.push_back(r);
    }
  }
  std::sort(split.begin(), split.end(), [](CpRange a, CpRange b) { return a.lo < b.lo; });
  std::vector<CpRange> out;
  for (CpRange r : split) {
    if (!out.empty() && r.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

std::vector<CpRange> complement(const std::vector<CpRange>& ranges) {
  std::vector<CpRange> norm = normalize(ranges), out;
  uint32_t next = 0;
  for (CpRange r : norm) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCp) out.push_back({next, kMaxCp});
  return normalize(std::move(out));
}

std::vector<CpRange> intersect(const std::vector<CpRange>& a, const std::vector<CpRange>& b) {
  std::vector<CpRange> na = normalize(a), nb = normalize(b), out;
  for (CpRange x : na) {
    for (CpRange y : nb) {
      uint32_t lo = std::max(x.lo, y.lo), hi = std::min(x.hi, y.hi);
      if (lo <= hi) out.push_back({lo, hi});
    }
  }
  return normalize(std::move(out));
}

ExprPtr utf8_class(const std::vector<CpRange>& ranges) {
  std::vector<ExprPtr> alts;
  ByteSet ascii;
  bool any_ascii = false;
  for (CpRange r : normalize(ranges)) {
    if (r.lo <= 0x7F) {
      ascii.add(static_cast<int>(r.lo), static_cast<int>(std::min<uint32_t>(r.hi, 0x7F)));
      any_ascii = true;
      if (r.hi <= 0x7F) continue;
      r.lo = 0x80;
    }
    split_utf8(r.lo, r.hi, alts);
  }
  if (any_ascii) alts.insert(alts.begin(), byte_set(ascii));
  return alt(std::move(alts));
}

std::string utf8_encode(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

}  // namespace tf::grammar
