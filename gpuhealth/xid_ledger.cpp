// SPDX-License-Identifier: Apache-2.0
#include "gpuhealth/xid_ledger.h"

namespace neutracer {

void XidLedger::add(Counts &counts, const XidEvent &event) {
  Key key{event.gpu, std::to_string(event.report.xid)};
  if (!counts.contains(key) && counts.size() >= kMaxSeries)
    key.second = "other";
  ++counts[key];
}

void XidLedger::count(const XidEvent &event) { add(by_gpu_, event); }

void XidLedger::charge(const ProcessId &process, const XidEvent &event) {
  add(by_process_[process], event);
}

void XidLedger::retain(const std::set<ProcessId> &live) {
  std::erase_if(by_process_, [&](const auto &entry) { return !live.contains(entry.first); });
}

} // namespace neutracer
