// SPDX-License-Identifier: Apache-2.0
// The listen address as civetweb's listening_ports option takes it.
#include "http/civetweb_listen.h"

#include <gtest/gtest.h>

namespace neutracer {
namespace {

std::string port_option(const std::string &listen, bool ipv6) {
  const auto result = civetweb_listening_port(listen, ipv6);
  if (const auto *refusal = std::get_if<ListenRefusal>(&result))
    return "refused: " + refusal->reason;
  return std::get<std::string>(result);
}

TEST(CivetwebListen, SpellsEachFormAsCivetwebTakesIt) {
  EXPECT_EQ(port_option("127.0.0.1:10492", false), "127.0.0.1:10492");
  EXPECT_EQ(port_option("localhost:9400", false), "127.0.0.1:9400");
  EXPECT_EQ(port_option(":9400", false), "9400"); // every IPv4 interface
  EXPECT_EQ(port_option("[::1]:9400", true), "[::1]:9400");
}

TEST(CivetwebListen, Ipv6WithoutCivetwebSupportIsRefusedWithTheWayOut) {
  const auto refused = port_option("[::1]:9400", false);
  EXPECT_NE(refused.find("refused: this build of civetweb has no IPv6 support"), std::string::npos)
      << refused;
  EXPECT_NE(refused.find("0.0.0.0:PORT"), std::string::npos) << refused;
}

} // namespace
} // namespace neutracer
