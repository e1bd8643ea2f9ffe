// SPDX-License-Identifier: Apache-2.0
#include "stacks/call_sites.h"

#include <algorithm>

#include "common/enum_names.h"

namespace neutracer {

constexpr std::array<std::string_view, 3> kSiteKindNames = {"stack", "no_stack", "over_limit"};
static_assert(kSiteKindNames.size() == enum_count(SiteKind::over_limit));

std::string_view site_kind_name(SiteKind kind) { return enum_name(kind, kSiteKindNames); }

std::size_t
ProcessSites::AddressesHash::operator()(const std::vector<std::uint64_t> &addresses) const {
  std::size_t hash = addresses.size();
  for (const auto address : addresses)
    hash ^= std::hash<std::uint64_t>{}(address) + 0x9e3779b97f4a7c15ull + (hash << 6) + (hash >> 2);
  return hash;
}

SiteIndex ProcessSites::pseudo_site(SiteKind kind) {
  if (const auto it = pseudo_.find(kind); it != pseudo_.end())
    return it->second;
  const auto index = static_cast<SiteIndex>(sites_.size());
  sites_.push_back(Site{kind, nullptr, {}, {}});
  pseudo_.emplace(kind, index);
  ++version_;
  return index;
}

std::vector<std::uint64_t> ProcessSites::index_key(const CallSiteStack &stack) {
  auto key = stack.addresses;
  if (stack.python_key != 0) { // a zero never stands for an address: the two parts stay apart
    key.push_back(0);
    key.push_back(stack.python_key);
  }
  return key;
}

std::optional<SiteIndex> ProcessSites::find_site(const CallSiteStack &stack) const {
  const auto it = index_.find(index_key(stack));
  return it == index_.end() ? std::nullopt : std::optional(it->second);
}

SiteIndex ProcessSites::site(const CallSiteStack &stack, bool may_add,
                             const std::function<SymbolizedStack()> &symbolize) {
  auto key = index_key(stack);
  if (const auto it = index_.find(key); it != index_.end())
    return it->second;
  if (!may_add || stack.addresses.empty())
    return pseudo_site(stack.addresses.empty() ? SiteKind::no_stack : SiteKind::over_limit);
  const auto index = static_cast<SiteIndex>(sites_.size());
  sites_.push_back(
      Site{SiteKind::stack, std::make_shared<const SymbolizedStack>(symbolize()), {}, {}});
  index_.emplace(std::move(key), index);
  ++version_;
  return index;
}

void ProcessSites::restack(SiteIndex index, SymbolizedStack stack) {
  sites_.at(index).stack = std::make_shared<const SymbolizedStack>(std::move(stack));
  ++version_;
}

void ProcessSites::add_live(std::unordered_map<std::uint64_t, Live> &live, SiteIndex site,
                            std::uint64_t address, std::uint64_t bytes) {
  // An address handed out again means its free was missed: retire the old allocation.
  drop_live(live, address);
  if (live_.size() + live_vmm_.size() >= settings_.max_live_allocations_per_process) {
    ++untracked_;
    return;
  }
  live.emplace(address, Live{site, bytes});
  auto &counts = sites_[site].counts;
  ++counts.live_allocations;
  counts.live_bytes += bytes;
}

void ProcessSites::drop_live(std::unordered_map<std::uint64_t, Live> &live, std::uint64_t address) {
  const auto it = live.find(address);
  if (it == live.end())
    return;
  auto &counts = sites_[it->second.site].counts;
  counts.live_allocations -= std::min<std::uint64_t>(counts.live_allocations, 1);
  counts.live_bytes -= std::min(counts.live_bytes, it->second.bytes);
  live.erase(it);
  ++version_;
}

void ProcessSites::allocation(SiteIndex site, std::uint64_t address, std::uint64_t bytes,
                              bool vmm) {
  auto &counts = sites_.at(site).counts;
  ++counts.allocations;
  counts.allocated_bytes += bytes;
  add_live(vmm ? live_vmm_ : live_, site, address, bytes);
  ++version_;
}

void ProcessSites::free(std::uint64_t address, bool vmm) {
  drop_live(vmm ? live_vmm_ : live_, address);
}

void ProcessSites::failed_allocation(SiteIndex site, std::uint64_t bytes, std::uint64_t time_ns) {
  auto &counts = sites_.at(site).counts;
  ++counts.failed_allocations;
  counts.failed_bytes += bytes;
  failures_.emplace_back(time_ns, site);
  if (failures_.size() > std::max<std::size_t>(1, settings_.recent_failures))
    failures_.erase(failures_.begin());
  ++version_;
}

void ProcessSites::wait(SiteIndex site, double seconds) {
  auto &counts = sites_.at(site).counts;
  ++counts.waits;
  counts.wait_seconds += seconds;
  ++version_;
}

void ProcessSites::set_launch_samples(const std::map<SiteIndex, std::uint64_t> &samples) {
  for (SiteIndex index = 0; index < sites_.size(); ++index) {
    const auto found = samples.find(index);
    const std::uint64_t value = found == samples.end() ? 0 : found->second;
    if (sites_[index].counts.launch_samples != value) {
      sites_[index].counts.launch_samples = value;
      ++version_;
    }
  }
}

void ProcessSites::set_pending_waits(
    const std::map<SiteIndex, std::pair<std::uint64_t, double>> &waits) {
  for (SiteIndex index = 0; index < sites_.size(); ++index) {
    const auto found = waits.find(index);
    const auto [count, longest] =
        found == waits.end() ? std::pair<std::uint64_t, double>{0, 0.0} : found->second;
    auto &counts = sites_[index].counts;
    if (counts.pending_waits != count || counts.longest_pending_seconds != longest) {
      counts.pending_waits = count;
      counts.longest_pending_seconds = longest;
      ++version_;
    }
  }
}

namespace {

bool same_python_frames(const std::vector<Frame> &a, const std::vector<Frame> &b) {
  const auto text = [](const std::shared_ptr<const std::string> &s) {
    return s ? std::string_view(*s) : std::string_view();
  };
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [&](const Frame &x, const Frame &y) {
    return x.line == y.line && text(x.function) == text(y.function) &&
           text(x.module) == text(y.module);
  });
}

} // namespace

void ProcessSites::set_waiting_python(std::map<SiteIndex, std::vector<Frame>> frames) {
  for (SiteIndex index = 0; index < sites_.size(); ++index) {
    const auto found = frames.find(index);
    auto wanted = found == frames.end() ? std::vector<Frame>{} : std::move(found->second);
    if (!same_python_frames(sites_[index].waiting_python, wanted)) {
      sites_[index].waiting_python = std::move(wanted);
      ++version_;
    }
  }
}

void ProcessSites::set_leak_samples(std::span<const std::uint64_t> addresses) {
  std::vector<std::uint64_t> samples(sites_.size(), 0);
  for (const auto address : addresses)
    if (const auto it = live_.find(address); it != live_.end())
      ++samples[it->second.site];
  for (SiteIndex index = 0; index < sites_.size(); ++index)
    if (sites_[index].counts.leak_samples != samples[index]) {
      sites_[index].counts.leak_samples = samples[index];
      ++version_;
    }
}

std::optional<SiteIndex> ProcessSites::failure_site(std::uint64_t time_ns) const {
  if (failures_.empty())
    return std::nullopt;
  for (auto it = failures_.rbegin(); it != failures_.rend(); ++it)
    if (it->first <= time_ns)
      return it->second;
  return failures_.back().second;
}

template <typename Better> std::optional<SiteIndex> ProcessSites::best_site(Better better) const {
  std::optional<SiteIndex> best;
  for (const bool stacks_only : {true, false}) {
    for (SiteIndex index = 0; index < sites_.size(); ++index)
      if ((!stacks_only || sites_[index].kind == SiteKind::stack) &&
          better(sites_[index].counts, best ? &sites_[*best].counts : nullptr))
        best = index;
    if (best)
      return best;
  }
  return std::nullopt;
}

std::vector<SiteIndex> ProcessSites::leak_sites(std::size_t count) const {
  std::vector<SiteIndex> holding;
  for (SiteIndex index = 0; index < sites_.size(); ++index)
    if (sites_[index].counts.live_bytes > 0)
      holding.push_back(index);
  const auto rank = [&](SiteIndex index) {
    const auto &site = sites_[index];
    return std::tuple(site.kind == SiteKind::stack, site.counts.leak_samples,
                      site.counts.live_bytes);
  };
  const auto shown = std::min(count, holding.size());
  std::partial_sort(holding.begin(), holding.begin() + static_cast<std::ptrdiff_t>(shown),
                    holding.end(), [&](SiteIndex a, SiteIndex b) { return rank(a) > rank(b); });
  holding.resize(shown);
  return holding;
}

std::optional<SiteIndex> ProcessSites::wait_site() const {
  return best_site([](const SiteCounts &counts, const SiteCounts *best) {
    return counts.pending_waits > 0 &&
           (!best || counts.longest_pending_seconds > best->longest_pending_seconds);
  });
}

ProcessSites &CallSites::process(const ProcessId &id) {
  return processes_.try_emplace(id, settings_).first->second;
}

const ProcessSites *CallSites::find(const ProcessId &id) const {
  const auto it = processes_.find(id);
  return it == processes_.end() ? nullptr : &it->second;
}

ProcessSites *CallSites::find(const ProcessId &id) {
  const auto it = processes_.find(id);
  return it == processes_.end() ? nullptr : &it->second;
}

bool CallSites::may_add(const ProcessSites &sites, double share) const {
  const auto budget = static_cast<std::size_t>(
      static_cast<double>(settings_.max_sites_per_process) * std::clamp(share, 0.0, 1.0));
  return sites.stack_sites() < budget &&
         total_stack_sites() < settings_.max_sites;
}

std::size_t CallSites::total_stack_sites() const {
  std::size_t total = 0;
  for (const auto &[id, sites] : processes_)
    total += sites.stack_sites();
  return total;
}

void CallSites::forget(const ProcessId &id) { processes_.erase(id); }

} // namespace neutracer
