// SPDX-License-Identifier: Apache-2.0
#pragma once
// The listen address as civetweb's listening_ports option spells it. Pure.
#include <string>
#include <variant>

namespace neutracer {

struct ListenRefusal {
  std::string reason;
};

// "127.0.0.1:10492" stays; "localhost:P" becomes "127.0.0.1:P" (civetweb takes numeric
// addresses only); ":P" becomes "P" (every IPv4 interface, as ":9100" means for Prometheus
// exporters); "[::1]:P" stays when `ipv6_supported`, and is refused with the reason otherwise
// (Debian 12's libcivetweb1 is built without IPv6).
std::variant<std::string, ListenRefusal> civetweb_listening_port(const std::string &listen,
                                                                 bool ipv6_supported);

// Whether the linked civetweb was built with IPv6 (mg_check_feature).
bool civetweb_has_ipv6();

} // namespace neutracer
