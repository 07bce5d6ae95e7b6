// Prometheus' text exposition format (0.0.4): HELP and TYPE lines per family, samples with
// escaped label values, and numbers written the way Prometheus parses them.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tf::server {

using Labels = std::vector<std::pair<std::string_view, std::string>>;

class PrometheusText {
 public:
  // Starts a family: `type` is counter, gauge or histogram.
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const Labels& labels, double value);
  // A histogram's _bucket (cumulative, `le` last), _sum and _count samples.
  void histogram(std::string_view name, const Labels& labels, const std::vector<double>& bounds,
                 const std::vector<int64_t>& cumulative, double sum);
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// "1", "0.25", "+Inf": integers without a fraction, others in their shortest exact form.
std::string prometheus_number(double v);
// A label value with backslash, double quote and newline escaped.
std::string escape_label_value(std::string_view v);

}  // namespace tf::server
