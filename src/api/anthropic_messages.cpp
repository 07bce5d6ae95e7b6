// The anthropic_messages adapter.
#include "api/route.h"

namespace tf::api {

void add_anthropic_messages_routes(std::vector<Route>&) {}

}  // namespace tf::api
