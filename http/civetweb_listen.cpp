// SPDX-License-Identifier: Apache-2.0
#include "http/civetweb_listen.h"

#include <civetweb.h>
#include <string_view>

namespace neutracer {

std::variant<std::string, ListenRefusal> civetweb_listening_port(const std::string &listen,
                                                                 bool ipv6_supported) {
  constexpr std::string_view kLocalhost = "localhost:";
  if (listen.starts_with(kLocalhost))
    return "127.0.0.1:" + listen.substr(kLocalhost.size());
  if (listen.starts_with(":"))
    return listen.substr(1);
  if (listen.starts_with("[") && !ipv6_supported)
    return ListenRefusal{"this build of civetweb has no IPv6 support (Debian 12's libcivetweb1 "
                         "is built without it); listen on an IPv4 address such as 0.0.0.0:PORT, "
                         "or put a proxy that listens on IPv6 in front (docs/operations.md, "
                         "\"Securing the endpoint\")"};
  return listen;
}

bool civetweb_has_ipv6() { return mg_check_feature(8) != 0; }

} // namespace neutracer
