// SPDX-License-Identifier: Apache-2.0
#pragma once
// NCCL (docs/nccl.md): takes the NCCL call events the CUDA collector decodes, keeps each
// process's communicators, judges the communicators with two or more ranks on this node for
// collective hangs and stragglers at each scan, writes their series, and journals each finding
// once per episode. Comes after the CUDA collector.
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "collectors/collector.h"
#include "collectors/counted_journal.h"
#include "collectors/cuda_collector.h"
#include "cuda/event_sinks.h"
#include "nccl/communicators.h"
#include "nccl/nccl_findings.h"
#include "stacks/site_recorder.h"

namespace neutracer {

struct Config;

inline constexpr double kStragglerRenoticeSeconds = 600;

struct NcclCollectorSettings {
  bool enabled = true;
  CollectiveHangSettings hang;
  StragglerSettings straggler;
};
// The config's nccl.* keys.
NcclCollectorSettings nccl_collector_settings(const Config &config);

class NcclCollector final : public Collector, public NcclEventSink {
public:
  // `sites` null: call stacks off (a hang names no call site).
  NcclCollector(const NcclCollectorSettings &settings, const CudaCollector &cuda,
                SiteRecorder *sites, CountedJournal &journal);

  std::string_view name() const override { return "nccl"; }
  bool scan() override;
  void write(MetricSink &sink) const override;

  void nccl_call(const ProcessId &id, const nt_nccl_event &event) override;

  const NcclCommunicators &communicators() const { return communicators_; }
  const NcclFindings &findings() const { return findings_; }

private:
  // "function (file:line)" of the latest collective of `rank` in `communicator`; empty if none.
  std::string last_site(const std::string &communicator, const NcclRankId &rank) const;
  void journal_new_findings(const NcclFindings &previous);

  NcclCollectorSettings settings_;
  const CudaCollector &cuda_;
  SiteRecorder *sites_;
  CountedJournal &journal_;
  NcclCommunicators communicators_;
  // The site of each communicator's latest collective, per process and communicator handle.
  std::map<std::pair<ProcessId, std::uint64_t>, std::int32_t> last_sites_;
  StragglerHistory stragglers_; // each communicator's tallies over nccl.straggler_window
  NcclFindings findings_;
  // The straggler last journaled per communicator, and when: a straggler that comes and goes
  // is journaled again only after kStragglerRenoticeSeconds (or when another rank straggles).
  std::map<std::string, std::pair<NcclRankId, std::uint64_t>> straggler_notices_;
  std::uint64_t now_ns_ = 0; // of the last scan
};

} // namespace neutracer
