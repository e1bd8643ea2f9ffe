// SPDX-License-Identifier: Apache-2.0
// The shipped Kubernetes deployment: well-formed manifests whose parts find each other (Service ->
// DaemonSet pods and port, ServiceMonitor -> Service and port name, NetworkPolicy -> pods and
// port), no capabilities beyond the systemd unit's, alert rules that select the job the
// ServiceMonitor gives, an image recipe that installs the Debian package, and a daemon config the
// daemon itself accepts.
#include <algorithm>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <yaml-cpp/yaml.h>

#include "config/config.h"

namespace neutracer {
namespace {

const std::string kKubernetesDir = NEUTRACER_SOURCE_DIR "/deploy/kubernetes/";

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// kind -> document, for files with one document per kind.
std::map<std::string, YAML::Node> documents_by_kind(const std::string &file) {
  std::map<std::string, YAML::Node> by_kind;
  for (const auto &document : YAML::LoadAllFromFile(kKubernetesDir + file)) {
    const auto kind = document["kind"].as<std::string>();
    EXPECT_FALSE(by_kind.contains(kind)) << file << ": two " << kind;
    by_kind[kind] = document;
  }
  return by_kind;
}

std::map<std::string, std::string> string_map(const YAML::Node &node) {
  std::map<std::string, std::string> map;
  for (const auto &entry : node)
    map[entry.first.as<std::string>()] = entry.second.as<std::string>();
  return map;
}

// Every key=value of `selector` is among `labels` (a matchLabels selector selects them).
bool selects(const YAML::Node &selector, const std::map<std::string, std::string> &labels) {
  const auto wanted = string_map(selector);
  return !wanted.empty() && std::ranges::all_of(wanted, [&](const auto &entry) {
    const auto found = labels.find(entry.first);
    return found != labels.end() && found->second == entry.second;
  });
}

// The capabilities of the systemd unit's CapabilityBoundingSet, without the CAP_ prefix.
std::set<std::string> unit_capabilities() {
  const auto unit = read_file(NEUTRACER_SOURCE_DIR "/systemd/neutracerd.service.in");
  std::smatch line;
  EXPECT_TRUE(std::regex_search(unit, line, std::regex("\nCapabilityBoundingSet=([^\n]*)\n")));
  std::set<std::string> capabilities;
  std::istringstream words(line[1].str());
  for (std::string word; words >> word;)
    capabilities.insert(word.starts_with("CAP_") ? word.substr(4) : word);
  return capabilities;
}

struct Deployment {
  std::map<std::string, YAML::Node> core = documents_by_kind("neutracerd-daemonset.yaml");
  YAML::Node daemonset = core["DaemonSet"];
  YAML::Node pod = daemonset["spec"]["template"]["spec"];
  YAML::Node container = pod["containers"][0];
  std::map<std::string, std::string> pod_labels =
      string_map(daemonset["spec"]["template"]["metadata"]["labels"]);
  std::string namespace_name = core["Namespace"]["metadata"]["name"].as<std::string>();

  YAML::Node container_port(const std::string &name) const {
    for (const auto &port : container["ports"])
      if (port["name"].as<std::string>() == name)
        return port;
    return {};
  }
};

TEST(DeployManifest, DaemonSetHasTheNeededPrivilegesAndAValidConfig) {
  Deployment deployment;
  std::set<std::string> kinds;
  for (const auto &[kind, document] : deployment.core) {
    kinds.insert(kind);
    if (kind != "Namespace") {
      EXPECT_EQ(document["metadata"]["namespace"].as<std::string>(), deployment.namespace_name)
          << kind;
    }
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"Namespace", "ConfigMap", "DaemonSet", "Service",
                                          "NetworkPolicy"}));
  const auto &pod = deployment.pod;
  ASSERT_TRUE(pod.IsDefined());
  EXPECT_TRUE(pod["hostPID"].as<bool>()); // /proc of every process on the node
  EXPECT_TRUE(
      selects(deployment.daemonset["spec"]["selector"]["matchLabels"], deployment.pod_labels));
  const auto security = deployment.container["securityContext"];
  EXPECT_FALSE(security["privileged"].as<bool>());
  EXPECT_FALSE(security["allowPrivilegeEscalation"].as<bool>()); // the unit's NoNewPrivileges
  EXPECT_TRUE(security["readOnlyRootFilesystem"].as<bool>());    // the unit's ProtectSystem
  std::set<std::string> capabilities;
  for (const auto &capability : security["capabilities"]["add"])
    capabilities.insert(capability.as<std::string>());
  for (const char *needed : {"BPF", "PERFMON", "SYS_ADMIN", "SYS_PTRACE"})
    EXPECT_TRUE(capabilities.contains(needed)) << needed;
  EXPECT_GE(pod["terminationGracePeriodSeconds"].as<int>(), 45); // uprobe removal

  const auto embedded_config =
      deployment.core["ConfigMap"]["data"]["neutracerd.yaml"].as<std::string>();
  const auto parsed = parse_config_yaml(embedded_config, "configmap");
  ASSERT_FALSE(parsed.error) << parsed.error->what;
  EXPECT_EQ(parsed.config->listen, "0.0.0.0:10492");
  const auto metrics = deployment.container_port("metrics");
  ASSERT_TRUE(metrics.IsDefined()) << "no container port named metrics";
  EXPECT_EQ(metrics["containerPort"].as<int>(), 10492);
  for (const char *probe : {"readinessProbe", "livenessProbe"}) {
    EXPECT_EQ(deployment.container[probe]["httpGet"]["path"].as<std::string>(), "/healthz");
    EXPECT_EQ(deployment.container[probe]["httpGet"]["port"].as<std::string>(), "metrics");
  }
}

// No capability the systemd unit does not have: the container gets the unit's sandbox, not more.
TEST(DeployManifest, CapabilitiesAreASubsetOfTheSystemdUnits) {
  Deployment deployment;
  const auto allowed = unit_capabilities();
  ASSERT_TRUE(allowed.contains("SYS_ADMIN")) << "CapabilityBoundingSet not parsed";
  for (const auto &container : deployment.pod["containers"]) {
    const auto capabilities = container["securityContext"]["capabilities"];
    ASSERT_EQ(capabilities["drop"][0].as<std::string>(), "ALL")
        << "without drop: [ALL] the runtime's default capabilities stay";
    for (const auto &capability : capabilities["add"]) {
      auto name = capability.as<std::string>();
      if (name.starts_with("CAP_"))
        name = name.substr(4);
      EXPECT_TRUE(allowed.contains(name)) << name << " is not in the unit's CapabilityBoundingSet";
    }
  }
  EXPECT_FALSE(deployment.pod["initContainers"].IsDefined());
  EXPECT_FALSE(deployment.pod["hostNetwork"].IsDefined() &&
               deployment.pod["hostNetwork"].as<bool>());
}

TEST(DeployManifest, ServiceSelectsTheDaemonSetPodsAndTheirMetricsPort) {
  Deployment deployment;
  const auto service = deployment.core["Service"]["spec"];
  EXPECT_TRUE(selects(service["selector"], deployment.pod_labels));
  ASSERT_EQ(service["ports"].size(), 1u);
  const auto port = service["ports"][0];
  EXPECT_EQ(port["name"].as<std::string>(), "metrics");
  const auto target = port["targetPort"].as<std::string>();
  const auto container_port = deployment.container_port("metrics");
  EXPECT_TRUE(target == "metrics" || target == container_port["containerPort"].as<std::string>())
      << "targetPort " << target;
  EXPECT_EQ(port["protocol"].as<std::string>("TCP"), "TCP");
}

TEST(DeployManifest, ServiceMonitorScrapesTheServicesMetricsPortAsTheRulesJob) {
  Deployment deployment;
  const auto monitors = documents_by_kind("neutracerd-servicemonitor.yaml");
  ASSERT_EQ(monitors.size(), 1u);
  const auto monitor = monitors.at("ServiceMonitor");
  EXPECT_EQ(monitor["apiVersion"].as<std::string>(), "monitoring.coreos.com/v1");
  const auto &service = deployment.core["Service"];
  EXPECT_TRUE(selects(monitor["spec"]["selector"]["matchLabels"],
                      string_map(service["metadata"]["labels"])));
  const auto monitored = monitor["spec"]["namespaceSelector"]["matchNames"];
  const auto service_namespace = service["metadata"]["namespace"].as<std::string>();
  EXPECT_TRUE(monitor["metadata"]["namespace"].as<std::string>() == service_namespace ||
              std::ranges::any_of(monitored, [&](const YAML::Node &name) {
                return name.as<std::string>() == service_namespace;
              }));
  ASSERT_EQ(monitor["spec"]["endpoints"].size(), 1u);
  const auto endpoint = monitor["spec"]["endpoints"][0];
  EXPECT_EQ(endpoint["port"].as<std::string>(),
            service["spec"]["ports"][0]["name"].as<std::string>());
  EXPECT_EQ(endpoint["path"].as<std::string>("/metrics"), "/metrics");
  EXPECT_FALSE(endpoint["honorLabels"].as<bool>(false));

  // The operator's job is the Service's name (no jobLabel): the job the rules select.
  EXPECT_FALSE(monitor["spec"]["jobLabel"].IsDefined());
  const auto job = service["metadata"]["name"].as<std::string>();
  EXPECT_EQ(job, "neutracerd");

  // The target labels that would clash with the daemon's own labels are dropped at the end.
  const auto relabelings = endpoint["relabelings"];
  ASSERT_TRUE(relabelings.IsSequence() && relabelings.size() > 0);
  const auto last = relabelings[relabelings.size() - 1];
  EXPECT_EQ(last["action"].as<std::string>(), "labeldrop");
  const std::regex dropped("^(?:" + last["regex"].as<std::string>() + ")$");
  for (const char *label : {"namespace", "pod", "container", "service", "endpoint"})
    EXPECT_TRUE(std::regex_match(label, dropped)) << label;
  for (const char *label : {"instance", "job", "node", "scrape_namespace", "scrape_pod"})
    EXPECT_FALSE(std::regex_match(label, dropped)) << label;
}

TEST(DeployManifest, NetworkPolicyAdmitsOnlyTheMetricsPortToTheDaemonSetPods) {
  Deployment deployment;
  const auto policy = deployment.core["NetworkPolicy"]["spec"];
  EXPECT_TRUE(selects(policy["podSelector"]["matchLabels"], deployment.pod_labels));
  std::set<std::string> types;
  for (const auto &type : policy["policyTypes"])
    types.insert(type.as<std::string>());
  EXPECT_EQ(types, (std::set<std::string>{"Ingress", "Egress"}));
  EXPECT_EQ(policy["egress"].size(), 0u); // the daemon opens no connections
  const auto container_port = deployment.container_port("metrics");
  ASSERT_EQ(policy["ingress"].size(), 1u);
  const auto rule = policy["ingress"][0];
  ASSERT_EQ(rule["ports"].size(), 1u);
  const auto port = rule["ports"][0]["port"].as<std::string>();
  EXPECT_TRUE(port == "metrics" || port == container_port["containerPort"].as<std::string>())
      << "port " << port;
  EXPECT_EQ(rule["ports"][0]["protocol"].as<std::string>("TCP"), "TCP");
  ASSERT_GE(rule["from"].size(), 1u) << "an empty from admits everyone";
  for (const auto &peer : rule["from"])
    EXPECT_TRUE(peer["podSelector"].IsDefined() || peer["namespaceSelector"].IsDefined() ||
                peer["ipBlock"].IsDefined());
}

TEST(DeployManifest, PrometheusRuleSelectsTheServiceMonitorsJob) {
  const auto rules = documents_by_kind("neutracerd-prometheusrule.yaml");
  ASSERT_EQ(rules.size(), 1u);
  const auto rule = rules.at("PrometheusRule");
  EXPECT_EQ(rule["apiVersion"].as<std::string>(), "monitoring.coreos.com/v1");
  std::size_t expressions = 0;
  for (const auto &group : rule["spec"]["groups"])
    for (const auto &alert : group["rules"]) {
      const auto expr = alert["expr"].as<std::string>();
      EXPECT_NE(expr.find("job=\"neutracerd\""), std::string::npos) << alert["alert"];
      ++expressions;
    }
  EXPECT_GE(expressions, 10u);
}

TEST(DeployManifest, ImageRecipeInstallsTheDebianPackageAndRunsTheDaemon) {
  const auto recipe = read_file(NEUTRACER_SOURCE_DIR "/deploy/container/Containerfile");
  // Joined continuation lines, one instruction per line, comments dropped.
  std::vector<std::string> instructions;
  std::string current;
  std::istringstream lines(recipe);
  for (std::string line; std::getline(lines, line);) {
    if (current.empty() && (line.empty() || line.starts_with("#")))
      continue;
    if (line.ends_with("\\")) {
      current += line.substr(0, line.size() - 1);
      continue;
    }
    instructions.push_back(current + line);
    current.clear();
  }
  auto find = [&](const std::string &pattern) {
    const std::regex re(pattern);
    return std::ranges::find_if(instructions, [&](const std::string &instruction) {
      return std::regex_search(instruction, re);
    });
  };
  ASSERT_FALSE(instructions.empty());
  EXPECT_TRUE(std::regex_search(instructions.front(), std::regex("^FROM \\S*debian:12(-slim)?$")))
      << instructions.front() << ": the package is built for Debian 12";
  // The package file of this version, copied in and installed with apt (its Depends resolved).
  const auto arg = find("^ARG DEB=");
  ASSERT_NE(arg, instructions.end());
  EXPECT_EQ(*arg, "ARG DEB=neutracerd_" NEUTRACER_VERSION "_amd64.deb");
  EXPECT_NE(find("^COPY \\$\\{DEB\\} /tmp/neutracerd\\.deb$"), instructions.end());
  EXPECT_NE(find("^RUN .*apt-get install -y --no-install-recommends /tmp/neutracerd\\.deb"),
            instructions.end());
  EXPECT_EQ(find("^RUN .*(make|cmake|g\\+\\+|gcc|/usr/sbin/neutracerd\\b)"), instructions.end())
      << "the image installs the package, it does not build or copy a binary";
  EXPECT_EQ(find("^USER "), instructions.end()) << "the daemon runs as root, as in the unit";
  const auto entrypoint = find("^ENTRYPOINT ");
  ASSERT_NE(entrypoint, instructions.end());
  EXPECT_EQ(*entrypoint, "ENTRYPOINT [\"/usr/sbin/neutracerd\"]");
  EXPECT_NE(find("^EXPOSE 10492$"), instructions.end());

  // The DaemonSet's args name the config the ConfigMap mounts.
  Deployment deployment;
  std::vector<std::string> args;
  for (const auto &arg_node : deployment.container["args"])
    args.push_back(arg_node.as<std::string>());
  EXPECT_EQ(args, (std::vector<std::string>{"--config", "/etc/neutracerd/neutracerd.yaml"}));
  EXPECT_FALSE(deployment.container["command"].IsDefined()) << "keep the image's ENTRYPOINT";
}

} // namespace
} // namespace neutracer
