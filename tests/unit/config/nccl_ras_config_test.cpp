// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <gtest/gtest.h>

#include <string>

namespace neutracer {
namespace {

std::string error_of(const std::string &yaml) {
  const auto result = parse_config_yaml(yaml, "test.yaml");
  EXPECT_FALSE(result.config.has_value()) << yaml;
  return result.error ? result.error->what : "";
}

TEST(NcclRasConfig, OffByDefault) {
  const Config config;
  EXPECT_FALSE(config.nccl.ras_enabled);
  EXPECT_EQ(config.nccl.ras_interval, std::chrono::minutes(1));
  EXPECT_EQ(config.nccl.ras_address, "localhost:28028");
  EXPECT_EQ(config.nccl.ras_timeout, std::chrono::seconds(15));
}

TEST(NcclRasConfig, ReadsItsKeys) {
  const auto result = parse_config_yaml("nccl:\n  ras_enabled: true\n  ras_interval: 30s\n  "
                                        "ras_address: \"[::1]:28100\"\n  ras_timeout: 5s\n",
                                        "test.yaml");
  ASSERT_TRUE(result.config.has_value()) << result.error->what;
  EXPECT_TRUE(result.config->nccl.ras_enabled);
  EXPECT_EQ(result.config->nccl.ras_interval, std::chrono::seconds(30));
  EXPECT_EQ(result.config->nccl.ras_address, "[::1]:28100");
  EXPECT_EQ(result.config->nccl.ras_timeout, std::chrono::seconds(5));
}

TEST(NcclRasConfig, TheIntervalIsAtLeastTenSeconds) {
  const auto error = error_of("nccl:\n  ras_interval: 2s\n");
  EXPECT_NE(error.find("nccl.ras_interval"), std::string::npos) << error;
  EXPECT_NE(error.find("between 10s and 1h"), std::string::npos) << error;
}

TEST(NcclRasConfig, TheAddressIsALiteralHostAndAPort) {
  for (const char *good : {"localhost:28028", "10.1.2.3:28028", "[fd00::1]:28028"})
    EXPECT_TRUE(parse_config_yaml(std::string("nccl:\n  ras_address: \"") + good + "\"\n", "t.yaml")
                    .config.has_value())
        << good;
  for (const char *bad : {"gpu-node-1:28028", ":28028", "localhost", "127.0.0.1:99999"}) {
    const auto error = error_of(std::string("nccl:\n  ras_address: \"") + bad + "\"\n");
    EXPECT_NE(error.find("nccl.ras_address"), std::string::npos) << bad << ": " << error;
  }
}

} // namespace
} // namespace neutracer
