// The DType table and the GGML type-id mapping (ids from ggml.h).
#include "tensor/dtype.h"

#include <array>

namespace tf {

namespace {
constexpr std::array<DTypeInfo, 14> kInfo = {{
    {"f32", 1, 4, false},
    {"f16", 1, 2, false},
    {"bf16", 1, 2, false},
    {"i32", 1, 4, false},
    {"q4_0", 32, 18, true},
    {"q4_1", 32, 20, true},
    {"q5_0", 32, 22, true},
    {"q5_1", 32, 24, true},
    {"q8_0", 32, 34, true},
    {"q2_K", 256, 84, true},
    {"q3_K", 256, 110, true},
    {"q4_K", 256, 144, true},
    {"q5_K", 256, 176, true},
    {"q6_K", 256, 210, true},
}};

struct GgmlName {
  uint32_t id;
  std::string_view name;
  std::optional<DType> dtype;
};
constexpr GgmlName kGgml[] = {
    {0, "F32", DType::kF32},      {1, "F16", DType::kF16},       {2, "Q4_0", DType::kQ4_0},
    {3, "Q4_1", DType::kQ4_1},    {6, "Q5_0", DType::kQ5_0},     {7, "Q5_1", DType::kQ5_1},
    {8, "Q8_0", DType::kQ8_0},    {9, "Q8_1", std::nullopt},     {10, "Q2_K", DType::kQ2_K},
    {11, "Q3_K", DType::kQ3_K},   {12, "Q4_K", DType::kQ4_K},    {13, "Q5_K", DType::kQ5_K},
    {14, "Q6_K", DType::kQ6_K},   {15, "Q8_K", std::nullopt},    {16, "IQ2_XXS", std::nullopt},
    {17, "IQ2_XS", std::nullopt}, {18, "IQ3_XXS", std::nullopt}, {19, "IQ1_S", std::nullopt},
    {20, "IQ4_NL", std::nullopt}, {21, "IQ3_S", std::nullopt},   {22, "IQ2_S", std::nullopt},
    {23, "IQ4_XS", std::nullopt}, {24, "I8", std::nullopt},      {25, "I16", std::nullopt},
    {26, "I32", DType::kI32},     {27, "I64", std::nullopt},     {28, "F64", std::nullopt},
    {29, "IQ1_M", std::nullopt},  {30, "BF16", DType::kBF16},    {34, "TQ1_0", std::nullopt},
    {35, "TQ2_0", std::nullopt},  {39, "MXFP4", std::nullopt},
};
}  // namespace

const DTypeInfo& dtype_info(DType t) { return kInfo[static_cast<size_t>(t)]; }

std::optional<DType> dtype_from_ggml(uint32_t ggml_type) {
  for (const auto& g : kGgml)
    if (g.id == ggml_type) return g.dtype;
  return std::nullopt;
}

std::string_view ggml_type_name(uint32_t ggml_type) {
  for (const auto& g : kGgml)
    if (g.id == ggml_type) return g.name;
  return "unknown";
}

}  // namespace tf
