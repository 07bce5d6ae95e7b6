// The text format's writer.
#include "server/prometheus_text.h"

#include <fmt/format.h>

#include <cmath>

namespace tf::server {

std::string prometheus_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void PrometheusText::sample(std::string_view name, const Labels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) out_ += ',';
      fmt::format_to(std::back_inserter(out_), "{}=\"{}\"", labels[i].first,
                     escape_label_value(labels[i].second));
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += prometheus_number(value);
  out_ += '\n';
}

void PrometheusText::histogram(std::string_view name, const Labels& labels,
                               const std::vector<double>& bounds,
                               const std::vector<int64_t>& cumulative, double sum) {
  const std::string bucket = fmt::format("{}_bucket", name);
  Labels with_le = labels;
  with_le.emplace_back("le", "");
  for (size_t i = 0; i < cumulative.size(); ++i) {
    with_le.back().second = i < bounds.size() ? prometheus_number(bounds[i]) : std::string("+Inf");
    sample(bucket, with_le, static_cast<double>(cumulative[i]));
  }
  sample(fmt::format("{}_sum", name), labels, sum);
  sample(fmt::format("{}_count", name), labels,
         cumulative.empty() ? 0.0 : static_cast<double>(cumulative.back()));
}

}  // namespace tf::server
