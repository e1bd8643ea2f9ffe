// SPDX-License-Identifier: Apache-2.0
#include "kmsg/kmsg_reader.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

namespace neutracer {
namespace {

// /dev/kmsg refuses (EINVAL) a read into a buffer smaller than the record; records with their
// dictionary are at most 8 KiB.
constexpr std::size_t kReadBytes = 16 * 1024;

} // namespace

KmsgReader::KmsgReader(std::string path) : path_(std::move(path)), buffer_(kReadBytes) {}

void KmsgReader::fail(const std::string &what, int error) {
  const auto message = what + " " + path_ + ": " + std::strerror(error);
  if (message != error_)
    spdlog::error("kernel log: {}; Xid reports are not read (retried every {} scans)", message,
                  kReopenAfterCalls);
  error_ = message;
  fd_.reset();
  calls_until_open_ = kReopenAfterCalls;
}

bool KmsgReader::open() {
  UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    fail("cannot open", errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    fail("cannot stat", errno);
    return false;
  }
  record_per_read_ = S_ISCHR(st.st_mode);
  caught_up_ = false;
  seen_before_open_ = last_seq_;
  splitter_ = KmsgSplitter{};
  counted_splitter_drops_ = 0;
  fd_ = std::move(fd);
  if (!error_.empty())
    spdlog::info("kernel log: reading {} again", path_);
  error_.clear();
  return true;
}

void KmsgReader::accept(std::string_view text, KmsgBatch &batch) {
  auto record = parse_kmsg_record(text);
  if (!record) {
    ++batch.malformed;
    return;
  }
  bool backlog = !caught_up_;
  if (seen_before_open_ && !caught_up_) {
    // Reopened after a failure: what it read before is skipped, the rest is new to it.
    if (record->seq <= *seen_before_open_)
      return;
    backlog = false;
  }
  if (last_seq_ && record->seq > *last_seq_)
    batch.lost += record->seq - *last_seq_ - 1;
  last_seq_ = record->seq;
  batch.records.push_back({std::move(*record), backlog});
}

KmsgBatch KmsgReader::read(std::size_t max_records) {
  KmsgBatch batch;
  if (!fd_) {
    if (calls_until_open_ > 0) {
      --calls_until_open_;
      return batch;
    }
    if (!open())
      return batch;
  }
  while (batch.records.size() < max_records) {
    const ssize_t got = ::read(fd_.get(), buffer_.data(), buffer_.size());
    if (got > 0) {
      const std::string_view bytes(buffer_.data(), static_cast<std::size_t>(got));
      if (record_per_read_) {
        accept(bytes, batch);
      } else {
        splitter_.feed(bytes);
        for (const auto &text : splitter_.take(false))
          accept(text, batch);
      }
      continue;
    }
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0 && errno == EPIPE) {
      // Overwritten before it was read: the next read gives the oldest record left, and the
      // gap in its number is what was lost.
      continue;
    }
    if (got == 0 || errno == EAGAIN) {
      // Nothing more now (EOF of a file or of a FIFO without writer, or an empty /dev/kmsg).
      if (!record_per_read_)
        for (const auto &text : splitter_.take(true))
          accept(text, batch);
      caught_up_ = true;
      break;
    }
    fail("cannot read", errno);
    break;
  }
  batch.malformed += splitter_.oversized() + splitter_.orphan_lines() - counted_splitter_drops_;
  counted_splitter_drops_ = splitter_.oversized() + splitter_.orphan_lines();
  return batch;
}

} // namespace neutracer
