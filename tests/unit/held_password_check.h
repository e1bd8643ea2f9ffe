// SPDX-License-Identifier: Apache-2.0
#pragma once
// A bcrypt password check for tests that, while held, blocks inside until released: it keeps a
// BasicAuthenticator's bcrypt slot taken for as long as a test needs.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include "http/basic_authenticator.h"
#include "http/bcrypt.h"

namespace neutracer {

struct HeldPasswordCheck {
  std::mutex mutex;
  std::condition_variable changed;
  bool held = false;
  int inside = 0; // checks started so far

  BasicAuthenticator::PasswordCheck function() {
    return [this](const std::string &password, const std::string &hash) {
      std::unique_lock lock(mutex);
      ++inside;
      changed.notify_all();
      changed.wait(lock, [this] { return !held; });
      return bcrypt_matches(password, hash);
    };
  }
  void set_held(bool value) {
    std::lock_guard lock(mutex);
    held = value;
    changed.notify_all();
  }
  bool wait_inside(int count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(5), [&] { return inside == count; });
  }
};

} // namespace neutracer
