// SPDX-License-Identifier: Apache-2.0
#include "gpus/host_gpus.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

namespace neutracer {

std::optional<std::string> gpu_uuid_from_information(std::string_view text) {
  constexpr std::string_view kKey = "GPU UUID:";
  while (!text.empty()) {
    const auto end = text.find('\n');
    auto line = text.substr(0, end);
    if (line.starts_with(kKey)) {
      line.remove_prefix(kKey.size());
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
        line.remove_prefix(1);
      while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
        line.remove_suffix(1);
      if (line.empty())
        return std::nullopt;
      return std::string(line);
    }
    if (end == std::string_view::npos)
      break;
    text.remove_prefix(end + 1);
  }
  return std::nullopt;
}

std::vector<HostGpu> read_host_gpus(const std::filesystem::path &proc_root) {
  std::vector<std::string> bus_ids;
  std::error_code error;
  for (std::filesystem::directory_iterator it(proc_root / "driver/nvidia/gpus", error), end;
       !error && it != end; it.increment(error))
    bus_ids.push_back(it->path().filename().string());
  std::sort(bus_ids.begin(), bus_ids.end());
  std::vector<HostGpu> gpus;
  for (const auto &bus_id : bus_ids) {
    std::ifstream file(proc_root / "driver/nvidia/gpus" / bus_id / "information");
    std::ostringstream text;
    text << file.rdbuf();
    HostGpu gpu;
    gpu.index = static_cast<int>(gpus.size());
    gpu.pci_bus_id = bus_id;
    gpu.uuid = gpu_uuid_from_information(text.str()).value_or("");
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

} // namespace neutracer
