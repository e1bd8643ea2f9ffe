// SPDX-License-Identifier: Apache-2.0
// Fuzzes the kubelet's log names (/var/log/containers/*.log, /var/log/pods/*): a pod's
// spec chooses them, and they become label values.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "containers/kubernetes_log_names.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

namespace {

bool kubernetes_chars(const std::string &text) {
  for (const char c : text)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
      return false;
  return !text.empty();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view name(reinterpret_cast<const char *>(data), size);
  neutracer::PodNameIndex index;

  if (const auto log = neutracer::parse_container_log_name(name)) {
    require(log->pod + "_" + log->namespace_name + "_" + log->container + "-" + log->container_id +
                    ".log" ==
                name,
            "the parts rebuild the file name");
    require(kubernetes_chars(log->pod) && kubernetes_chars(log->namespace_name) &&
                kubernetes_chars(log->container),
            "names hold only DNS-1123 characters");
    require(log->container_id.size() == 64, "a container id has 64 hex digits");
    index.add(*log);
    neutracer::ContainerIdentity identity;
    identity.id = log->container_id;
    const auto found = index.find(identity);
    require(found.pod == log->pod && found.container == log->container,
            "an indexed container is found by its id");
  }

  if (const auto pod = neutracer::parse_pod_log_directory(name)) {
    require(pod->namespace_name + "_" + pod->pod + "_" + pod->uid == name,
            "the parts rebuild the directory name");
    require(kubernetes_chars(pod->pod) && kubernetes_chars(pod->namespace_name),
            "names hold only DNS-1123 characters");
    index.add(*pod);
    neutracer::ContainerIdentity identity;
    identity.id = "not-in-the-index";
    identity.pod_uid = pod->uid;
    const auto found = index.find(identity);
    require(found.pod == pod->pod && found.namespace_name == pod->namespace_name &&
                found.container.empty(),
            "a pod is found by its uid, without a container name");
  }
  return 0;
}
