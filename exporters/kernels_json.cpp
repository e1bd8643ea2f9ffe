#include "exporters/kernels_json.h"

#include <nlohmann/json.hpp>

#include "exporters/container_metrics.h"

namespace neutracer {

std::string kernels_json(const CudaState &state) {
  auto processes = nlohmann::json::array();
  for (const auto &[id, process] : state.processes()) {
    auto kernels = nlohmann::json::array();
    for (const auto &[label, series] : process.kernels)
      kernels.push_back(
          {{"kernel", label}, {"launches", series.launches}, {"full_names", series.full_names}});
    nlohmann::json entry{{"pid", id.pid}, {"comm", process.comm}};
    // The container fields of /api/v1/processes: container (the name), container_id, ...
    for (const auto &[key, value] : container_info_labels(process.container))
      entry[key] = value;
    entry["kernels"] = std::move(kernels);
    processes.push_back(std::move(entry));
  }
  // Replace invalid UTF-8 (names come from traced processes) instead of throwing.
  return nlohmann::json{{"processes", std::move(processes)}}.dump(
             2, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

} // namespace neutracer
