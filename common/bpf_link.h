#pragma once
// Owning BPF links, and a background reaper for them: removing a uprobe waits for an RCU grace
// period in the kernel (~0.1 s each, one after another from one thread), and the main loop
// must keep scanning and publishing meanwhile.
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

struct bpf_link;

namespace neutracer {

struct BpfLinkDeleter {
  void operator()(bpf_link *link) const;
};
using BpfLink = std::unique_ptr<bpf_link, BpfLinkDeleter>;

// Destroys the links on up to 128 threads at once and returns when all are gone.
void destroy_links(std::vector<BpfLink> links);

// Destroys batches of links on one background thread, in order; the destructor finishes them.
class LinkReaper {
public:
  LinkReaper();
  ~LinkReaper();
  LinkReaper(const LinkReaper &) = delete;
  LinkReaper &operator=(const LinkReaper &) = delete;

  void reap(std::vector<BpfLink> links);

private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::vector<BpfLink>> batches_;
  bool stopping_ = false;
  std::thread worker_;
};

} // namespace neutracer
