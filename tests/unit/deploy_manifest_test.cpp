// The shipped Kubernetes manifest: well-formed, with the privileges the daemon needs, and a
// daemon config the daemon itself accepts.
#include <gtest/gtest.h>
#include <set>
#include <yaml-cpp/yaml.h>

#include "config/config.h"

namespace neutracer {
namespace {

TEST(DeployManifest, DaemonSetHasTheNeededPrivilegesAndAValidConfig) {
  const auto documents =
      YAML::LoadAllFromFile(NEUTRACER_SOURCE_DIR "/deploy/kubernetes/neutracerd-daemonset.yaml");
  std::set<std::string> kinds;
  std::string embedded_config;
  YAML::Node pod;
  for (const auto &document : documents) {
    kinds.insert(document["kind"].as<std::string>());
    if (document["kind"].as<std::string>() == "ConfigMap")
      embedded_config = document["data"]["neutracerd.yaml"].as<std::string>();
    if (document["kind"].as<std::string>() == "DaemonSet")
      pod = document["spec"]["template"]["spec"];
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"Namespace", "ConfigMap", "DaemonSet"}));
  ASSERT_TRUE(pod.IsDefined());
  EXPECT_TRUE(pod["hostPID"].as<bool>()); // /proc of every process on the node
  std::set<std::string> capabilities;
  for (const auto &capability : pod["containers"][0]["securityContext"]["capabilities"]["add"])
    capabilities.insert(capability.as<std::string>());
  for (const char *needed : {"BPF", "PERFMON", "SYS_ADMIN", "SYS_PTRACE"})
    EXPECT_TRUE(capabilities.contains(needed)) << needed;
  EXPECT_GE(pod["terminationGracePeriodSeconds"].as<int>(), 45); // uprobe removal

  const auto parsed = parse_config_yaml(embedded_config, "configmap");
  ASSERT_FALSE(parsed.error) << parsed.error->what;
  EXPECT_EQ(parsed.config->listen, "0.0.0.0:10492");
  EXPECT_EQ(pod["containers"][0]["ports"][0]["containerPort"].as<int>(), 10492);
}

} // namespace
} // namespace neutracer
