// The openai_responses adapter.
#include "api/route.h"

namespace tf::api {

void add_openai_responses_routes(std::vector<Route>&) {}

}  // namespace tf::api
