// SPDX-License-Identifier: Apache-2.0
// Replays the recorded allocation streams (tests/fixtures/leak_streams) through the leak
// detector for a grid of fast-trend settings, each at 12 clock offsets x 4 scan phases, and
// prints per setting the worst and median latency over the leaks and how many replays of each
// healthy stream were flagged. BENCHMARKS.md, "Fast leak settings", chose the defaults from it.
//
//   cmake --build build --target neutracer_leak_settings_sweep
//   build/tests/neutracer_leak_settings_sweep tests/fixtures/leak_streams
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "detectors/leak_detector.h"

namespace {

using neutracer::LeakDetector;
using neutracer::LeakSettings;
using neutracer::MemoryChange;
using neutracer::MemoryChangeKind;

constexpr double kScanMs = 2000;

struct Recording {
  std::optional<double> fault_ms;
  double end_ms = 0;
  // time, is a free, address, bytes
  std::vector<std::tuple<double, int, std::uint64_t, std::uint64_t>> events;
};

std::optional<Recording> load(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return std::nullopt;
  const auto document = nlohmann::json::parse(in, nullptr, false);
  if (document.is_discarded())
    return std::nullopt;
  Recording recording;
  if (!document["fault_ms"].is_null())
    recording.fault_ms = document["fault_ms"].get<double>();
  recording.end_ms = document["end_ms"].get<double>();
  std::uint64_t address = 0x7f0000000000;
  for (const auto &block : document["blocks"]) {
    const auto bytes = block[1].get<std::uint64_t>();
    recording.events.emplace_back(block[0].get<double>(), 0, address, bytes);
    if (!block[2].is_null())
      recording.events.emplace_back(block[2].get<double>(), 1, address, bytes);
    address += bytes + 4096;
  }
  std::sort(recording.events.begin(), recording.events.end());
  return recording;
}

// Milliseconds from the fault (or the start) to the first scan that suspects a leak.
std::optional<double> detection_ms(const Recording &recording, const LeakSettings &settings,
                                   double clock_start_ms, double first_scan_ms) {
  const auto ns = [&](double ms) {
    return static_cast<std::uint64_t>(std::llround((clock_start_ms + ms) * 1e6));
  };
  std::vector<MemoryChange> changes;
  std::uint64_t used = 0;
  for (const auto &[ms, is_free, address, bytes] : recording.events) {
    used = is_free ? used - bytes : used + bytes;
    changes.push_back({ns(ms), is_free ? MemoryChangeKind::free : MemoryChangeKind::allocation,
                       address, bytes, used, 0});
  }
  LeakDetector detector(settings);
  std::size_t next = 0;
  used = 0;
  for (double t = first_scan_ms; t <= recording.end_ms + kScanMs; t += kScanMs) {
    const std::size_t begin = next;
    while (next < changes.size() && changes[next].time_ns <= ns(t))
      used = changes[next++].used_after;
    detector.observe(std::span(changes).subspan(begin, next - begin));
    if (detector.evaluate(ns(t), used, std::nullopt).suspected)
      return t - recording.fault_ms.value_or(0);
  }
  return std::nullopt;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s tests/fixtures/leak_streams\n", argv[0]);
    return 2;
  }
  const std::vector<std::string> leaks{"leak_list", "leak_list_vmm", "leak_graph",
                                       "leak_graph_vmm"};
  const std::vector<std::string> healthy{"cnn_train",         "cnn_train_vmm", "inference",
                                         "inference_vmm",     "transformer",   "transformer_vmm",
                                         "warmup_steady",     "warmup_steady_vmm"};
  std::vector<Recording> leak_recordings, healthy_recordings;
  for (const auto *names : {&leaks, &healthy})
    for (const auto &name : *names) {
      auto recording = load(std::string(argv[1]) + "/" + name + ".json");
      if (!recording) {
        std::fprintf(stderr, "cannot read %s/%s.json\n", argv[1], name.c_str());
        return 1;
      }
      (names == &leaks ? leak_recordings : healthy_recordings).push_back(std::move(*recording));
    }
  std::printf("window windows floor_MiB ratio | leak latency worst median (s) | never | "
              "healthy replays flagged\n");
  for (const double window : {1.5, 2.0, 2.5, 3.0})
    for (const int windows : {4, 5, 6})
      for (int floor_mib = 96; floor_mib <= 176; floor_mib += 16)
        for (const double ratio : {2.0, 3.0}) {
          LeakSettings settings;
          settings.fast_window_seconds = window;
          settings.fast_windows = windows;
          settings.fast_min_growth_bytes = static_cast<std::uint64_t>(floor_mib) << 20;
          settings.fast_max_rise_ratio = ratio;
          std::vector<double> latencies;
          int never = 0;
          std::vector<int> flagged(healthy.size());
          for (int clock = 0; clock < 12; ++clock)
            for (int scan = 0; scan < 4; ++scan) {
              const double clock_start = 7654321.5 + clock * window * 1000 / 12;
              const double first_scan = kScanMs - scan * kScanMs / 4;
              for (const auto &recording : leak_recordings) {
                // The slow trend catches every leak within minutes: count those as missed.
                const auto latency = detection_ms(recording, settings, clock_start, first_scan);
                if (latency && *latency <= 60000)
                  latencies.push_back(*latency / 1000);
                else
                  ++never;
              }
              for (std::size_t i = 0; i < healthy_recordings.size(); ++i)
                flagged[i] +=
                    detection_ms(healthy_recordings[i], settings, clock_start, first_scan) ? 1 : 0;
            }
          std::sort(latencies.begin(), latencies.end());
          std::printf("%.1f s %d %3d %.0f | %5.1f %5.1f | %3d |", window, windows, floor_mib, ratio,
                      latencies.empty() ? 0.0 : latencies.back(),
                      latencies.empty() ? 0.0 : latencies[latencies.size() / 2], never);
          for (std::size_t i = 0; i < healthy.size(); ++i)
            if (flagged[i] > 0)
              std::printf(" %s %d", healthy[i].c_str(), flagged[i]);
          std::printf("\n");
        }
  return 0;
}
