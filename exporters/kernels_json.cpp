// SPDX-License-Identifier: Apache-2.0
#include "exporters/kernels_json.h"

#include <nlohmann/json.hpp>

#include "exporters/container_metrics.h"
#include "exporters/json_array_document.h"
#include "http/content_encoding.h"

namespace neutracer {
namespace {

// Passes the document on to `take` a piece at a time.
template <typename Take> void write_kernels_json(const CudaState &state, Take &&take) {
  JsonArrayDocument document("processes", kJsonPieceBytes * 2);
  for (const auto &[id, process] : state.processes()) {
    auto kernels = nlohmann::json::array();
    const auto full_names = process.full_names();
    for (const auto &[label, series] : process.kernels) {
      const auto names = full_names.find(label);
      kernels.push_back(
          {{"kernel", label},
           {"launches", series.launches},
           {"full_names", names != full_names.end() ? names->second : FlatSet<std::string>{}}});
    }
    nlohmann::json entry{{"pid", id.pid},
                         {"comm", process.comm},
                         {"launches_estimated", process.launches_estimated}};
    // The container fields of /api/v1/processes: container (the name), container_id, ...
    for (const auto &[key, value] : container_info_labels(process.container))
      entry[key] = value;
    entry["kernels"] = std::move(kernels);
    document.add(entry);
    if (document.size() >= kJsonPieceBytes)
      take(document.take_text());
  }
  take(std::move(document).finish());
}

} // namespace

std::string kernels_json(const CudaState &state) {
  std::string text;
  write_kernels_json(state, [&](const std::string &piece) { text += piece; });
  return text;
}

std::string kernels_json_gzip(const CudaState &state) {
  GzipWriter gzip;
  write_kernels_json(state, [&](const std::string &piece) { gzip.write(piece); });
  return std::move(gzip).finish();
}

} // namespace neutracer
