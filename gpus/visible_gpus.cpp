// SPDX-License-Identifier: Apache-2.0
#include "gpus/visible_gpus.h"

#include "common/text.h"

#include <algorithm>
#include <charconv>
#include <optional>

namespace neutracer {
namespace {

std::vector<std::string_view> split_commas(std::string_view list) {
  std::vector<std::string_view> parts;
  while (true) {
    const auto comma = list.find(',');
    parts.push_back(trim(list.substr(0, comma)));
    if (comma == std::string_view::npos)
      return parts;
    list.remove_prefix(comma + 1);
  }
}

std::optional<int> parse_index(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0)
    return std::nullopt;
  return value;
}

// The host GPU a UUID or unique UUID prefix ("GPU-8f2a") names.
std::optional<int> host_index_of_uuid(std::string_view name, const std::vector<HostGpu> &host) {
  if (!name.starts_with("GPU-"))
    return std::nullopt; // MIG instances and other forms: not a whole GPU we can name
  std::optional<int> match;
  for (const auto &gpu : host)
    if (std::string_view(gpu.uuid).starts_with(name)) {
      if (match)
        return std::nullopt; // ambiguous prefix
      match = gpu.index;
    }
  return match;
}

// Applies one device list (CUDA's or the container runtime's) to the devices visible before
// it (host indices). Integer entries index that list; UUIDs name host GPUs.
std::vector<int> apply_device_list(std::string_view list, const std::vector<int> &visible,
                                   bool visible_bounded, const std::vector<HostGpu> &host) {
  std::vector<int> result;
  for (const auto entry : split_commas(list)) {
    std::optional<int> host_index;
    if (const auto ordinal = parse_index(entry)) {
      if (visible_bounded && static_cast<std::size_t>(*ordinal) >= visible.size())
        break;
      host_index = visible_bounded ? visible[static_cast<std::size_t>(*ordinal)] : *ordinal;
    } else {
      host_index = host_index_of_uuid(entry, host);
      if (host_index && visible_bounded &&
          std::find(visible.begin(), visible.end(), *host_index) == visible.end())
        host_index.reset();
    }
    if (!host_index || std::find(result.begin(), result.end(), *host_index) != result.end())
      break; // the runtime stops at the first invalid or repeated entry
    result.push_back(*host_index);
  }
  return result;
}

} // namespace

EnvironmentValue environment_value(std::string_view environ, std::string_view name) {
  while (!environ.empty()) {
    const auto end = environ.find('\0');
    const auto entry = environ.substr(0, end);
    if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=')
      return {true, std::string(entry.substr(name.size() + 1))};
    if (end == std::string_view::npos)
      break;
    environ.remove_prefix(end + 1);
  }
  return {};
}

std::vector<std::string> visible_gpu_labels(std::string_view environ,
                                            const std::vector<HostGpu> &host) {
  std::vector<int> visible;
  for (const auto &gpu : host)
    visible.push_back(gpu.index);
  bool bounded = !host.empty();

  // The NVIDIA container runtime exposes only these host GPUs to the container.
  const auto runtime = environment_value(environ, "NVIDIA_VISIBLE_DEVICES");
  if (runtime.found && runtime.value != "all" && !runtime.value.empty()) {
    if (runtime.value == "none" || runtime.value == "void")
      return {};
    visible = apply_device_list(runtime.value, visible, bounded, host);
    bounded = true;
  }
  const auto cuda = environment_value(environ, "CUDA_VISIBLE_DEVICES");
  if (cuda.found) {
    visible = apply_device_list(cuda.value, visible, bounded, host);
    bounded = true;
  }
  if (!bounded)
    return {};
  std::vector<std::string> labels;
  for (const int index : visible)
    labels.push_back(std::to_string(index));
  return labels;
}

} // namespace neutracer
