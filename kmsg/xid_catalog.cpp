// SPDX-License-Identifier: Apache-2.0
#include "kmsg/xid_catalog.h"

#include <array>

#include "common/enum_names.h"

namespace neutracer {
namespace {

struct Entry {
  unsigned xid;
  XidInfo info;
};

constexpr auto A = XidOrigin::application;
constexpr auto D = XidOrigin::driver;
constexpr auto H = XidOrigin::hardware;

constexpr std::array kXids = {
    Entry{8, {"GPU stopped processing", D, true}},
    Entry{13, {"graphics engine exception", A, true}},
    Entry{31, {"GPU memory page fault", A, true}},
    Entry{32, {"invalid or corrupted push buffer stream", D, true}},
    Entry{38, {"driver firmware error", D, false}},
    Entry{43, {"GPU stopped processing (the channel was reset)", A, true}},
    Entry{45, {"preemptive cleanup after earlier errors", A, true}},
    Entry{48, {"double-bit ECC error", H, true}},
    Entry{61, {"internal micro-controller breakpoint or warning", D, false}},
    Entry{62, {"internal micro-controller halt", D, true}},
    Entry{63, {"ECC page retirement or row remapping recorded", H, false}},
    Entry{64, {"ECC page retirement or row remapping recording failed", H, false}},
    Entry{68, {"video decoder (NVDEC) exception", A, true}},
    Entry{69, {"graphics engine class error", A, true}},
    Entry{74, {"NVLink error", H, true}},
    Entry{79, {"GPU has fallen off the bus", H, true}},
    Entry{92, {"high single-bit ECC error rate", H, false}},
    Entry{94, {"contained ECC error", H, true}},
    Entry{95, {"uncontained ECC error", H, true}},
    Entry{109, {"context switch timeout", D, true}},
    Entry{119, {"GSP RPC timeout", D, true}},
    Entry{120, {"GSP error", D, true}},
    Entry{140, {"unrecovered ECC error", H, true}},
};

} // namespace

XidInfo xid_info(unsigned xid) {
  for (const auto &entry : kXids)
    if (entry.xid == xid)
      return entry.info;
  return XidInfo{"", XidOrigin::driver, false};
}

constexpr std::array<std::string_view, 3> kXidOriginNames = {"application", "driver", "hardware"};
static_assert(kXidOriginNames.size() == enum_count(XidOrigin::hardware));

std::string_view xid_origin_name(XidOrigin origin) { return enum_name(origin, kXidOriginNames); }

} // namespace neutracer
