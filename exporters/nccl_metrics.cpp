// SPDX-License-Identifier: Apache-2.0
#include "exporters/nccl_metrics.h"

#include <string>
#include <vector>

#include "exporters/metric_builders.h"

namespace neutracer {
namespace {

// A rank's labels: its process's, then the communicator's id, the rank and the ranks in all
// ("-1" where NCCL decides them: split communicators).
struct RankRow {
  ProcessId process;
  const NcclCommunicator &communicator;
  Labels labels;
};

std::vector<RankRow> rank_rows(const NcclCommunicators &all, const CudaState &state) {
  std::vector<RankRow> rows;
  for (const auto &[id, comms] : all.processes()) {
    const auto process = state.processes().find(id);
    if (process == state.processes().end())
      continue;
    const auto labels = process_labels(id, process->second.comm, process->second.container);
    for (const auto &[handle, comm] : comms) {
      auto row_labels = labels;
      row_labels.emplace_back("communicator", comm.id);
      row_labels.emplace_back("rank", std::to_string(comm.rank));
      row_labels.emplace_back("nranks", std::to_string(comm.nranks));
      rows.push_back({id, comm, std::move(row_labels)});
    }
  }
  return rows;
}

// Labels of the rank `id` of `communicator` in `rows`; null when it is not there.
const Labels *labels_of(const std::vector<RankRow> &rows, const std::string &communicator,
                        const NcclRankId &id) {
  for (const auto &row : rows)
    if (row.communicator.id == communicator && row.process == id.process &&
        row.communicator.rank == id.rank)
      return &row.labels;
  return nullptr;
}

void per_operation(const std::vector<RankRow> &rows, MetricSink &sink, std::string_view name,
                   std::string_view help,
                   const std::array<std::uint64_t, kNcclTransferOps> NcclCommunicator::*values) {
  sink.family(name, help, MetricType::counter);
  for (const auto &row : rows)
    for (std::size_t index = 0; index < kNcclTransferOps; ++index)
      if (row.communicator.calls[index] > 0)
        sink.sample(row.labels, {{"op", nccl_op_name(static_cast<nt_nccl_op>(index + 1))}},
                    static_cast<double>((row.communicator.*values)[index]));
}

} // namespace

void write_nccl_metrics(const NcclCommunicators &all, const NcclFindings &findings,
                        const CudaState &state, std::uint64_t now_ns, MetricSink &sink) {
  const auto rows = rank_rows(all, state);
  per_operation(rows, sink, "neutracer_nccl_collectives_total",
                "NCCL calls enqueued, by operation: the collectives (AllReduce, Broadcast, "
                "Reduce, AllGather, ReduceScatter) and point-to-point Send and Recv",
                &NcclCommunicator::calls);
  per_operation(rows, sink, "neutracer_nccl_collective_bytes_total",
                "Bytes of the NCCL calls enqueued, by operation: the count argument times the "
                "element size (AllReduce, Broadcast, Reduce: the buffer; AllGather: what each "
                "rank sends; ReduceScatter: what each rank receives)",
                &NcclCommunicator::bytes);
  per_operation(rows, sink, "neutracer_nccl_failed_calls_total",
                "NCCL calls that returned an error, by operation", &NcclCommunicator::failed);
  sink.family("neutracer_nccl_enqueue_seconds_total",
              "Host time spent inside NCCL calls (enqueueing the work, not the GPU's transfer)",
              MetricType::counter);
  for (const auto &row : rows)
    sink.sample(row.labels, row.communicator.enqueue_seconds);
  sink.family("neutracer_nccl_seconds_since_last_collective",
              "Seconds since the rank's latest collective call (absent before its first)",
              MetricType::gauge);
  for (const auto &row : rows)
    if (row.communicator.collectives > 0 && now_ns >= row.communicator.last_call_ns)
      sink.sample(row.labels, static_cast<double>(now_ns - row.communicator.last_call_ns) / 1e9);

  sink.family("neutracer_nccl_hang_suspected",
              "1 while the communicator's ranks on this node disagree on how many collectives "
              "they called and none called one for nccl.hang_after: those ahead wait inside a "
              "collective for those behind. Communicators with two or more ranks here",
              MetricType::gauge);
  for (const auto &id : findings.judged)
    sink.sample({}, {{"communicator", id}}, findings.hangs.contains(id) ? 1.0 : 0.0);
  sink.family("neutracer_nccl_rank_waiting",
              "1 for each rank of a hung communicator that waits inside its latest collective",
              MetricType::gauge);
  for (const auto &[id, hang] : findings.hangs)
    for (const auto &rank : hang.waiting)
      if (const auto *labels = labels_of(rows, id, rank))
        sink.sample(*labels, 1.0);
  const auto per_straggler = [&](std::string_view name, std::string_view help,
                                 double (*value)(const NcclStragglerFinding &)) {
    sink.family(name, help, MetricType::gauge);
    for (const auto &[id, straggler] : findings.stragglers)
      if (const auto *labels = labels_of(rows, id, straggler.rank))
        sink.sample(*labels, value(straggler));
  };
  per_straggler("neutracer_nccl_straggler",
                "1 for the rank the others wait for at the communicator's collectives over "
                "nccl.straggler_window",
                [](const NcclStragglerFinding &) { return 1.0; });
  per_straggler("neutracer_nccl_straggler_wait_share",
                "The straggler's share of the time ranks waited at the communicator's "
                "collectives over nccl.straggler_window (0..1)",
                [](const NcclStragglerFinding &straggler) { return straggler.wait_share; });
  sink.family("neutracer_nccl_untracked_calls_total",
              "NCCL calls not counted: their process already had 64 communicators",
              MetricType::counter);
  sink.sample({}, static_cast<double>(all.untracked_calls()));
}

} // namespace neutracer
