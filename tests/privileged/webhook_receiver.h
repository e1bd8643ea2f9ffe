// SPDX-License-Identifier: Apache-2.0
#pragma once
// An Alertmanager webhook receiver for tests: a loopback HTTP server that answers every POST
// with 200 and keeps each body with the time it arrived.
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace neutracer::test {

struct Notification {
  std::chrono::steady_clock::time_point received;
  std::string body; // Alertmanager's JSON payload
};

class WebhookReceiver {
public:
  WebhookReceiver(); // listens on 127.0.0.1 at a free port
  ~WebhookReceiver();
  WebhookReceiver(const WebhookReceiver &) = delete;
  WebhookReceiver &operator=(const WebhookReceiver &) = delete;

  int port() const { return port_; }
  std::vector<Notification> notifications() const;

private:
  void serve();

  int listener_ = -1;
  int port_ = 0;
  bool stopping_ = false;
  mutable std::mutex mutex_;
  std::vector<Notification> notifications_;
  std::thread thread_;
};

} // namespace neutracer::test
