// SPDX-License-Identifier: Apache-2.0
#include "exporters/bpf_map_metrics.h"

#include <gtest/gtest.h>

namespace neutracer {
namespace {

TEST(BpfMapFamilies, OneSamplePerMapInEachFamily) {
  const auto families = bpf_map_families({{"launches", 1500, 65536}, {"inflight", 3, 16384}});
  ASSERT_EQ(families.size(), 2u);
  EXPECT_EQ(families[0].name, "neutracer_bpf_map_entries");
  EXPECT_EQ(families[1].name, "neutracer_bpf_map_max_entries");
  for (const auto &family : families) {
    EXPECT_EQ(family.type, MetricType::gauge);
    ASSERT_EQ(family.samples.size(), 2u);
    EXPECT_EQ(family.samples[0].labels, (Labels{{"map", "launches"}}));
    EXPECT_EQ(family.samples[1].labels, (Labels{{"map", "inflight"}}));
  }
  EXPECT_EQ(families[0].samples[0].value, 1500);
  EXPECT_EQ(families[0].samples[1].value, 3);
  EXPECT_EQ(families[1].samples[0].value, 65536);
  EXPECT_EQ(families[1].samples[1].value, 16384);
}

TEST(BpfMapFamilies, NoMapsGivesEmptyFamilies) {
  const auto families = bpf_map_families({});
  ASSERT_EQ(families.size(), 2u);
  EXPECT_TRUE(families[0].samples.empty());
  EXPECT_TRUE(families[1].samples.empty());
}

} // namespace
} // namespace neutracer
