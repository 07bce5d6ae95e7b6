// The server's pure parts: the bearer scheme, the methods a path allows, CORS headers and the
// response heads (the socket paths are driven by tests/integration against the real binary).
#include <gtest/gtest.h>

#include "server/cors.h"
#include "server/responders.h"
#include "server/router.h"

namespace tf::server {
namespace {

TEST(Router, BearerSchemeIsCaseInsensitiveAndTrimmed) {
  EXPECT_EQ(bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token("bearer abc"), "abc");
  EXPECT_EQ(bearer_token("BEARER \t abc  "), "abc");
  EXPECT_EQ(bearer_token("Bearerabc"), "");
  EXPECT_EQ(bearer_token("Basic abc"), "");
  EXPECT_EQ(bearer_token("Bearer"), "");
  EXPECT_EQ(bearer_token(""), "");
}

TEST(Router, AllowedMethodsPerPath) {
  EXPECT_EQ(allowed_methods("/health"), "GET, HEAD");
  EXPECT_EQ(allowed_methods("/v1/chat/completions"), "POST");
  EXPECT_EQ(allowed_methods("/v1/models/smol"), "GET, HEAD");
  EXPECT_EQ(allowed_methods("/v1/models/a/b"), "");
  EXPECT_EQ(allowed_methods("/nowhere"), "");
}

TEST(Cors, OnlyListedOriginsGetHeaders) {
  CorsPolicy off;
  EXPECT_TRUE(off.response_headers("https://a.example").empty());
  CorsPolicy some({"https://a.example"});
  auto h = some.response_headers("https://a.example");
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0], (std::pair<std::string, std::string>{"Access-Control-Allow-Origin",
                                                       "https://a.example"}));
  EXPECT_TRUE(some.response_headers("https://b.example").empty());
  EXPECT_TRUE(some.response_headers("").empty());
  CorsPolicy any({"*"});
  EXPECT_FALSE(any.response_headers("https://b.example").empty());
  auto pre = any.preflight_headers("https://b.example", "POST", "authorization");
  bool methods = false, headers = false;
  for (const auto& [k, v] : pre) {
    methods |= k == "Access-Control-Allow-Methods" && v == "POST";
    headers |= k == "Access-Control-Allow-Headers" && v == "authorization";
  }
  EXPECT_TRUE(methods && headers);
}

TEST(Responses, HeadsFrameBodiesCorrectly) {
  auto full = full_response(200, "application/json", "{}", true, {{"X-A", "1"}}, false);
  EXPECT_EQ(full,
            "HTTP/1.1 200 OK\r\nServer: tensorfold\r\nContent-Type: application/json\r\n"
            "Content-Length: 2\r\nX-A: 1\r\nConnection: keep-alive\r\n\r\n{}");
  // HEAD keeps the length, drops the body.
  auto head = full_response(200, "application/json", "{}", false, {}, true);
  EXPECT_NE(head.find("Content-Length: 2\r\n"), std::string::npos);
  EXPECT_TRUE(head.ends_with("Connection: close\r\n\r\n"));
  auto chunked = response_head(200, "text/event-stream", std::nullopt, true, {});
  EXPECT_NE(chunked.find("Transfer-Encoding: chunked\r\n"), std::string::npos);
  auto no_content = response_head(204, "", std::nullopt, true, {});
  EXPECT_EQ(no_content.find("Content-Length"), std::string::npos);
  EXPECT_EQ(no_content.find("Transfer-Encoding"), std::string::npos);
  EXPECT_NE(response_head(503, "application/json", 0, false, {}).find("Retry-After: 1\r\n"),
            std::string::npos);
}

}  // namespace
}  // namespace tf::server
