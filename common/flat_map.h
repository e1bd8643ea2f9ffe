// SPDX-License-Identifier: Apache-2.0
#pragma once
// Sorted-vector map and set for the many small per-process tables (a kernel's devices and full
// names, a process's kernel series and launch totals): tens of thousands of them at 1 000
// processes, where a std::map node per entry (32 bytes of tree links plus malloc's own) cost
// more than the entries. Iteration in key order, like std::map and std::set; inserting is
// O(size): build big ones in bulk (from_unsorted) rather than an entry at a time.
#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <utility>
#include <vector>

namespace neutracer {

template <typename Key, typename Value> class FlatMap {
public:
  using value_type = std::pair<Key, Value>;
  using iterator = typename std::vector<value_type>::iterator;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  FlatMap() = default;
  FlatMap(std::initializer_list<value_type> items) : items_(items) { normalize(); }

  // From entries in any order; of equal keys the first is kept.
  static FlatMap from_unsorted(std::vector<value_type> items) {
    FlatMap map;
    map.items_ = std::move(items);
    map.normalize();
    return map;
  }

  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void clear() { items_.clear(); }
  void shrink_to_fit() { items_.shrink_to_fit(); }

  iterator find(const Key &key) {
    const auto it = lower_bound(key);
    return it != items_.end() && it->first == key ? it : items_.end();
  }
  const_iterator find(const Key &key) const {
    const auto it = lower_bound(key);
    return it != items_.end() && it->first == key ? it : items_.end();
  }
  bool contains(const Key &key) const { return find(key) != end(); }
  const Value &at(const Key &key) const {
    const auto it = find(key);
    if (it == end())
      throw std::out_of_range("FlatMap::at: no such key");
    return it->second;
  }
  Value &operator[](const Key &key) {
    auto it = lower_bound(key);
    if (it == items_.end() || it->first != key)
      it = items_.insert(it, value_type(key, Value{}));
    return it->second;
  }

  bool operator==(const FlatMap &) const = default;

private:
  iterator lower_bound(const Key &key) {
    return std::lower_bound(items_.begin(), items_.end(), key,
                            [](const value_type &item, const Key &k) { return item.first < k; });
  }
  const_iterator lower_bound(const Key &key) const {
    return std::lower_bound(items_.begin(), items_.end(), key,
                            [](const value_type &item, const Key &k) { return item.first < k; });
  }
  void normalize() {
    std::stable_sort(items_.begin(), items_.end(),
                     [](const value_type &a, const value_type &b) { return a.first < b.first; });
    items_.erase(
        std::unique(items_.begin(), items_.end(),
                    [](const value_type &a, const value_type &b) { return a.first == b.first; }),
        items_.end());
  }

  std::vector<value_type> items_;
};

template <typename Key> class FlatSet {
public:
  using value_type = Key;
  using const_iterator = typename std::vector<Key>::const_iterator;
  using iterator = const_iterator;

  FlatSet() = default;
  FlatSet(std::initializer_list<Key> items) : items_(items) { normalize(); }

  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void shrink_to_fit() { items_.shrink_to_fit(); }

  // Any key that compares with Key (a string_view for strings).
  template <typename Other> bool contains(const Other &key) const {
    return std::binary_search(items_.begin(), items_.end(), key);
  }
  // Returns whether `key` was new.
  bool insert(const Key &key) {
    const auto it = std::lower_bound(items_.begin(), items_.end(), key);
    if (it != items_.end() && *it == key)
      return false;
    items_.insert(it, key);
    return true;
  }
  // Takes every key of `other` (a sorted merge); `other` is left empty.
  void merge(FlatSet &other) {
    if (other.empty())
      return;
    if (empty()) {
      items_ = std::move(other.items_);
      other.items_.clear();
      return;
    }
    std::vector<Key> merged;
    merged.reserve(items_.size() + other.items_.size());
    std::merge(std::make_move_iterator(items_.begin()), std::make_move_iterator(items_.end()),
               std::make_move_iterator(other.items_.begin()),
               std::make_move_iterator(other.items_.end()), std::back_inserter(merged));
    merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
    items_ = std::move(merged);
    other.items_.clear();
  }

  bool operator==(const FlatSet &) const = default;

private:
  void normalize() {
    std::sort(items_.begin(), items_.end());
    items_.erase(std::unique(items_.begin(), items_.end()), items_.end());
  }

  std::vector<Key> items_;
};

} // namespace neutracer
