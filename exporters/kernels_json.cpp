#include "exporters/kernels_json.h"

#include <nlohmann/json.hpp>

#include "exporters/container_metrics.h"
#include "exporters/json_array_document.h"

namespace neutracer {

std::string kernels_json(const CudaState &state) {
  JsonArrayDocument document("processes");
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
    document.add(entry);
  }
  return std::move(document).finish();
}

} // namespace neutracer
