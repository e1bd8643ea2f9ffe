// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the driver's Xid codes mean, for log lines, journal entries and alert routing. A
// summary of NVIDIA's Xid documentation ("Xid Errors", docs.nvidia.com/deploy/xid-errors);
// codes not listed read "Xid N" and count as driver errors. Pure.
#include <string_view>

namespace neutracer {

enum class XidOrigin {
  application, // most often the program's own fault (bad address, exception); the GPU is fine
  driver,      // the driver or the GPU's firmware; may need a GPU reset
  hardware,    // memory, bus or link faults: drain and reset the GPU, replace it if it recurs
};

struct XidInfo {
  std::string_view description;
  XidOrigin origin = XidOrigin::driver;
  // The GPU work of the process the driver names (or of every process on the GPU) ended: its
  // CUDA context is gone and its next CUDA call fails.
  bool ends_work = false;
};

XidInfo xid_info(unsigned xid);
std::string_view xid_origin_name(XidOrigin origin); // "application", "driver", "hardware"

} // namespace neutracer
