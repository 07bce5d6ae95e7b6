// Routing: maps method + path to a Service handler, after the API-key check.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/responder.h"
#include "api/service.h"

namespace tf::server {

void route(std::string_view method, std::string_view target, std::string_view authorization,
           std::string_view x_api_key, std::string_view body,
           const std::vector<std::string>& api_keys, api::Service& service, api::Responder& r);

}  // namespace tf::server
