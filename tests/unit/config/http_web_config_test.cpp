// SPDX-License-Identifier: Apache-2.0
// The `web:` section of the configuration file: basic-auth users, the concurrency limit, and
// TLS settings refused with a pointer to the reverse-proxy recipe.
#include <gtest/gtest.h>

#include <string>

#include "config/config.h"

namespace neutracer {
namespace {

const std::string kHash = "$2y$05$abcdefghijklmnopqrstuuHNbAKRhpaujgo33bRWs.NLUTJO3lOy2";

Config parse_ok(const std::string &yaml) {
  const ConfigResult result = parse_config_yaml(yaml, "web.yaml");
  EXPECT_FALSE(result.error.has_value()) << result.error->what;
  return result.config.value_or(Config{});
}

std::string parse_error(const std::string &yaml) {
  const ConfigResult result = parse_config_yaml(yaml, "web.yaml");
  EXPECT_FALSE(result.config.has_value()) << "unexpectedly parsed:\n" << yaml;
  return result.error ? result.error->what : std::string();
}

TEST(WebConfig, DefaultsAreOpenWithFourConcurrentRequests) {
  const Config config;
  EXPECT_TRUE(config.web.basic_auth_users.empty());
  EXPECT_EQ(config.web.max_concurrent_requests, 4u);
  EXPECT_EQ(config.listen, "127.0.0.1:10492") << "the endpoint must default to loopback";
  EXPECT_EQ(parse_ok("web:\n").web, config.web);
  EXPECT_EQ(parse_ok("web: {basic_auth_users: {}}\n").web, config.web);
}

TEST(WebConfig, ReadsUsersAndLimit) {
  const Config config = parse_ok("web:\n"
                                 "  max_concurrent_requests: 10\n"
                                 "  basic_auth_users:\n"
                                 "    prometheus: " +
                                 kHash +
                                 "\n"
                                 "    grafana: \"$2b$05$abcdefghijklmnopqrstuuHNbAKRhpaujgo33bRWs."
                                 "NLUTJO3lOy2\"\n");
  EXPECT_EQ(config.web.max_concurrent_requests, 10u);
  ASSERT_EQ(config.web.basic_auth_users.size(), 2u);
  EXPECT_EQ(config.web.basic_auth_users.at("prometheus"), kHash);
  EXPECT_TRUE(config.web.basic_auth_users.at("grafana").starts_with("$2b$05$"));
  EXPECT_EQ(validate_config(config), std::nullopt);
}

TEST(WebConfig, ConcurrencyLimitIsRangeChecked) {
  EXPECT_EQ(parse_ok("web: {max_concurrent_requests: 1}").web.max_concurrent_requests, 1u);
  EXPECT_EQ(parse_ok("web: {max_concurrent_requests: 64}").web.max_concurrent_requests, 64u);
  for (const std::string value : {"0", "65", "-1", "lots", "\"4\""}) {
    const std::string error = parse_error("web: {max_concurrent_requests: " + value + "}");
    EXPECT_NE(error.find("web.max_concurrent_requests"), std::string::npos) << error;
  }
  Config config;
  config.web.max_concurrent_requests = 0;
  ASSERT_TRUE(validate_config(config).has_value());
  EXPECT_NE(validate_config(config)->what.find("between 1 and 64"), std::string::npos);
}

TEST(WebConfig, MaxConnectionsDefaultsTo256AndIsChecked) {
  EXPECT_EQ(Config{}.web.max_connections, 256u);
  EXPECT_EQ(validate_config(Config{}), std::nullopt);
  EXPECT_EQ(parse_ok("web: {max_connections: 16}").web.max_connections, 16u);
  EXPECT_EQ(parse_ok("web: {max_connections: 4096}").web.max_connections, 4096u);
  for (const std::string value : {"0", "15", "4097", "-1", "many"}) {
    const std::string error = parse_error("web: {max_connections: " + value + "}");
    EXPECT_NE(error.find("web.max_connections"), std::string::npos) << error;
  }
  // Fewer connections than the admitted requests and their spare workers.
  Config config = parse_ok("web: {max_concurrent_requests: 64, max_connections: 71}");
  const auto problem = validate_config(config);
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->what.find("web.max_connections: invalid value '71': must be at least "
                               "web.max_concurrent_requests + 8 (72)"),
            std::string::npos)
      << problem->what;
  config.web.max_connections = 72;
  EXPECT_EQ(validate_config(config), std::nullopt);
  config.web.max_connections = 5000;
  EXPECT_NE(validate_config(config)->what.find("web.max_connections"), std::string::npos);
}

TEST(WebConfig, NonBcryptHashesAreRefusedWithoutEchoingThem) {
  for (const std::string hash : {"$6$saltsalt$abcdefghijklmnop", "$apr1$salt$abc", "hunter2",
                                 "$2y$05$short", "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="}) {
    const std::string error =
        parse_error("web:\n  basic_auth_users:\n    alice: \"" + hash + "\"\n");
    EXPECT_NE(error.find("web.yaml:2: web.basic_auth_users: user 'alice'"), std::string::npos)
        << error;
    EXPECT_NE(error.find("bcrypt"), std::string::npos) << error;
    EXPECT_EQ(error.find(hash), std::string::npos) << "the value leaked: " << error;
  }
}

TEST(WebConfig, BadUsersAndShapesAreRefused) {
  EXPECT_NE(parse_error("web: {basic_auth_users: {\"a:b\": \"" + kHash + "\"}}").find("':'"),
            std::string::npos);
  EXPECT_NE(parse_error("web: {basic_auth_users: {\"\": \"" + kHash + "\"}}").find("empty"),
            std::string::npos);
  EXPECT_NE(parse_error("web: {basic_auth_users: [alice]}").find("mapping of user names"),
            std::string::npos);
  EXPECT_NE(parse_error("web: {basic_auth_users: {alice: [x]}}").find("expected a bcrypt hash"),
            std::string::npos);
  EXPECT_NE(parse_error("web: {basic_auth_users: {alice: }}").find("user 'alice'"),
            std::string::npos);
  EXPECT_NE(parse_error("web: {basic_auth_users: }").find("missing value"), std::string::npos);
}

TEST(WebConfig, TlsSettingsAreRefusedWithThePointerToAProxy) {
  for (const std::string yaml :
       {"web: {tls_cert_file: /etc/neutracerd/cert.pem}", "web: {tls_key_file: /etc/k.pem}",
        "web:\n  tls_server_config:\n    cert_file: c.pem\n    key_file: k.pem\n"}) {
    const std::string error = parse_error(yaml);
    EXPECT_NE(error.find("TLS is not supported"), std::string::npos) << error;
    EXPECT_NE(error.find("reverse proxy"), std::string::npos) << error;
    EXPECT_NE(error.find("Securing the endpoint"), std::string::npos) << error;
    EXPECT_NE(error.find("deploy/nginx/neutracerd.conf"), std::string::npos) << error;
  }
}

TEST(WebConfig, UnknownKeysStayErrors) {
  const std::string error = parse_error("web: {max_requests: 4}");
  EXPECT_NE(error.find("unknown key 'web.max_requests'"), std::string::npos) << error;
  EXPECT_NE(error.find("web.basic_auth_users"), std::string::npos) << error;
  EXPECT_NE(parse_error("web: {http_server_config: {http2: false}}").find("unknown key"),
            std::string::npos);
}

TEST(WebConfig, ValidateChecksUsersSetInCode) {
  Config config;
  config.web.basic_auth_users = {{"alice", "plain"}};
  ASSERT_TRUE(validate_config(config).has_value());
  EXPECT_NE(validate_config(config)->what.find("web.basic_auth_users: user 'alice'"),
            std::string::npos);
  config.web.basic_auth_users = {{"a:b", kHash}};
  EXPECT_TRUE(validate_config(config).has_value());
}

} // namespace
} // namespace neutracer
