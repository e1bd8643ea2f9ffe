#include "exporters/kernels_json.h"

#include <nlohmann/json.hpp>

namespace neutracer {

std::string kernels_json(const CudaState &state) {
  auto processes = nlohmann::json::array();
  for (const auto &[id, process] : state.processes()) {
    auto kernels = nlohmann::json::array();
    for (const auto &[label, series] : process.kernels)
      kernels.push_back(
          {{"kernel", label}, {"launches", series.launches}, {"full_names", series.full_names}});
    processes.push_back({{"pid", id.pid},
                         {"comm", process.comm},
                         {"container", process.container.identity.id},
                         {"kernels", std::move(kernels)}});
  }
  // Replace invalid UTF-8 (names come from traced processes) instead of throwing.
  return nlohmann::json{{"processes", std::move(processes)}}.dump(
             2, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

} // namespace neutracer
