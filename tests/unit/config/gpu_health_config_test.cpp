// SPDX-License-Identifier: Apache-2.0
// The gpu_health section of the config file.
#include <gtest/gtest.h>

#include "config/config.h"

namespace neutracer {
namespace {

std::string error_of(const std::string &yaml) {
  const auto result = parse_config_yaml(yaml, "test.yaml");
  return result.error ? result.error->what : "";
}

TEST(GpuHealthConfig, DefaultsReadDevKmsg) {
  const Config config;
  EXPECT_TRUE(config.gpu_health.read_kernel_log);
  EXPECT_EQ(config.gpu_health.kmsg_path, "/dev/kmsg");
  EXPECT_EQ(config.gpu_health.xid_journal_per_minute, 30u);
}

TEST(GpuHealthConfig, EveryKey) {
  const auto result = parse_config_yaml("gpu_health:\n  read_kernel_log: false\n"
                                        "  kmsg_path: /tmp/kmsg.standin\n"
                                        "  xid_journal_per_minute: 5\n",
                                        "test.yaml");
  ASSERT_TRUE(result.config) << result.error->what;
  EXPECT_FALSE(result.config->gpu_health.read_kernel_log);
  EXPECT_EQ(result.config->gpu_health.kmsg_path, "/tmp/kmsg.standin");
  EXPECT_EQ(result.config->gpu_health.xid_journal_per_minute, 5u);
  EXPECT_FALSE(validate_config(*result.config));
}

TEST(GpuHealthConfig, BadValuesAreRefused) {
  EXPECT_NE(error_of("gpu_health:\n  kmsg_path: relative\n").find("must be an absolute path"),
            std::string::npos);
  EXPECT_NE(error_of("gpu_health:\n  xid_journal_per_minute: 0\n").find("between 1 and 10000"),
            std::string::npos);
  EXPECT_NE(error_of("gpu_health:\n  kmsg: /dev/kmsg\n").find("unknown key 'gpu_health.kmsg'"),
            std::string::npos);
  Config config;
  config.gpu_health.kmsg_path.clear();
  const auto problem = validate_config(config);
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->what.find("gpu_health.kmsg_path"), std::string::npos);
}

} // namespace
} // namespace neutracer
