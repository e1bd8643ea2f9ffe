// SPDX-License-Identifier: Apache-2.0
#pragma once
// Owning BPF links, and a background reaper for them: removing uprobe links waits for RCU
// grace periods in the kernel (~0.1 s each one after another), and the main loop must keep
// scanning and publishing meanwhile.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "common/unique_fd.h"

struct bpf_link;

namespace neutracer {

struct BpfLinkDeleter {
  void operator()(bpf_link *link) const;
};
using BpfLink = std::unique_ptr<bpf_link, BpfLinkDeleter>;

// Destroys the links on up to 128 threads at once and returns when all are gone.
void destroy_links(std::vector<BpfLink> links);

// The attach type of uprobe_multi links (Linux 6.6), newer than Debian 12's libbpf 1.1: a
// program loaded with it attaches only through attach_uprobe_multi.
inline constexpr int kUprobeMultiAttachType = 48; // BPF_TRACE_UPROBE_MULTI

// One link of `program_fd` on every offset of the file at `path`, for process `pid` only
// (breakpoints go into that process alone); `cookies[i]` is offsets[i]'s attach cookie.
// Closing the descriptor removes all of them at once (one RCU wait instead of one per probe).
// An invalid descriptor on failure, with errno set.
UniqueFd attach_uprobe_multi(int program_fd, const std::string &path, int pid,
                             std::span<const std::uint64_t> offsets,
                             std::span<const std::uint64_t> cookies, bool retprobe);

// Runs removals in the background; the destructor finishes them all. Removals queued while
// others run are started together, up to kMaxConcurrentRemovals at once: each waits for RCU
// grace periods, and concurrent waits share them. One after another, the launch links of 3 000
// processes that exited in bursts (~4 each) closed at about 3 a second on a loaded 2-CPU VM,
// holding ~12 000 descriptors for the better part of an hour.
inline constexpr std::size_t kMaxConcurrentRemovals = 64;
class LinkReaper {
public:
  LinkReaper();
  ~LinkReaper();
  LinkReaper(const LinkReaper &) = delete;
  LinkReaper &operator=(const LinkReaper &) = delete;

  void reap(std::vector<BpfLink> links);
  // Any other removal (closing link descriptors, say).
  void run(std::function<void()> removal);
  // Takes `pid`'s links out of `by_pid` and closes them in the background, then runs `after`
  // (none of them can fire by then). Nothing when `pid` has none.
  template <typename Link>
  void reap_process(std::map<int, std::vector<Link>> &by_pid, int pid,
                    std::function<void()> after = {}) {
    const auto it = by_pid.find(pid);
    if (it == by_pid.end())
      return;
    auto links = std::make_shared<std::vector<Link>>(std::move(it->second));
    by_pid.erase(it);
    run([links, after = std::move(after)] {
      if constexpr (std::is_same_v<Link, BpfLink>)
        destroy_links(std::move(*links)); // together: their RCU waits overlap
      else
        links->clear();
      if (after)
        after();
    });
  }

private:
  void work();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread worker_;
};

} // namespace neutracer
