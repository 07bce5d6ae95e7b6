// Typed reads of request-body fields, each failing with a 400 that names the field: the one
// vocabulary of "must be" errors every API's request parser shares.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/api_error.h"

namespace tf::api {

#define TF_API_TRY(decl, expr) TF_ASSIGN_OR_RETURN(decl, expr)

const char* type_name(const nlohmann::ordered_json& v);
// "'<param>' must be <want>, got <type>"
ApiError wrong_type(const std::string& param, const char* want, const nlohmann::ordered_json& v);

// Optional fields: absent and null read as nullopt (or the default). `name` is the field's full
// path for errors (defaults to key).
ApiResult<std::optional<double>> number(const nlohmann::ordered_json& body, const std::string& key,
                                        double lo, double hi, const std::string& name = {});
ApiResult<std::optional<int64_t>> integer(const nlohmann::ordered_json& body,
                                          const std::string& key, int64_t lo, int64_t hi,
                                          const std::string& name = {});
ApiResult<bool> boolean(const nlohmann::ordered_json& body, const std::string& key, bool def,
                        const std::string& name = {});
ApiResult<std::optional<std::string>> string_field(const nlohmann::ordered_json& body,
                                                   const std::string& key,
                                                   const std::string& name = {});

template <typename T>
std::optional<T> narrow(const std::optional<double>& v) {
  return v ? std::optional<T>(static_cast<T>(*v)) : std::nullopt;
}

}  // namespace tf::api
