// SPDX-License-Identifier: Apache-2.0
#pragma once
// A move-only hold on something lent out (a request slot, a turn at bcrypt), given back exactly
// once: by `Release(owner)` when the last holder goes. A moved-from hold gives back nothing, so
// a hold can travel in a std::optional without releasing twice.
#include <functional>
#include <utility>

namespace neutracer {

template <typename Owner, auto Release> class LentHold {
public:
  explicit LentHold(Owner &owner) : owner_(&owner) {}
  LentHold(LentHold &&other) noexcept : owner_(std::exchange(other.owner_, nullptr)) {}
  LentHold &operator=(LentHold &&) = delete;
  LentHold(const LentHold &) = delete;
  LentHold &operator=(const LentHold &) = delete;
  ~LentHold() {
    if (owner_)
      std::invoke(Release, *owner_);
  }

private:
  Owner *owner_;
};

} // namespace neutracer
