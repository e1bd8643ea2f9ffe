// SPDX-License-Identifier: Apache-2.0
#pragma once
// The labels shared by the exporters' per-process series, and families with one sample per
// labelled row.
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/process_id.h"
#include "containers/container_info.h"
#include "exposition/exposition.h"
#include "exposition/metric_sink.h"

namespace neutracer {

// Appends to `labels` each (name, value) of `candidates` whose value is known (not empty), in
// the given order: a series leaves out what the cgroup path or the log names did not tell.
inline void append_known_labels(
    Labels &labels,
    std::initializer_list<std::pair<const char *, const std::string *>> candidates) {
  for (const auto &[name, value] : candidates)
    if (!value->empty())
      labels.emplace_back(name, *value);
}

// The labels every per-process series carries: pid, comm and, where known, container (the
// container's name: the pod spec's in Kubernetes, Docker's), container_id (64-hex id from the
// cgroup path), namespace and pod (from the kubelet's log names) and slurm_job (the Slurm job id
// from the cgroup path). Those unknown are left out. `container` held the id until
// container_id took it (docs/metrics.md, "Breaking change: container labels").
inline Labels process_labels(const ProcessId &id, const std::string &comm,
                             const ContainerInfo &container) {
  Labels labels{{"pid", std::to_string(id.pid)}, {"comm", comm}};
  append_known_labels(labels, {{"container", &container.name()},
                               {"container_id", &container.identity.id},
                               {"namespace", &container.pod.namespace_name},
                               {"pod", &container.pod.pod},
                               {"slurm_job", &container.identity.slurm_job}});
  return labels;
}

// One process's (or view's) state with its labels, built once for all of its series.
template <typename State> struct LabelledRow {
  const State &state;
  Labels labels;
};

// One family with a sample per row, its value read from the row's state.
template <typename State>
void write_per_row(const std::vector<LabelledRow<State>> &rows, MetricSink &sink,
                   std::string_view name, std::string_view help, MetricType type,
                   const std::function<double(const State &)> &value) {
  sink.family(name, help, type);
  for (const auto &row : rows)
    sink.sample(row.labels, value(row.state));
}

} // namespace neutracer
