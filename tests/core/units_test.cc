#include "core/units.h"

#include <gtest/gtest.h>

namespace ccscope::core {
namespace {

TEST(UnitsTest, SizesUseBinaryMultiples) {
  EXPECT_EQ(*parseSize("8"), 8u);
  EXPECT_EQ(*parseSize("4K"), 4096u);
  EXPECT_EQ(*parseSize("64M"), 64u << 20);
  EXPECT_EQ(*parseSize("1GiB"), 1u << 30);
  EXPECT_EQ(*parseSize("2kb"), 2048u);
}

TEST(UnitsTest, BadSizesAreRejectedWithTheInput) {
  for (const char* s : {"", "12Q", "M", "-1", "1.5M", "99999999999999999999"}) {
    auto r = parseSize(s);
    EXPECT_FALSE(r.isOk()) << s;
    if (!r.isOk()) {
      EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    }
  }
}

TEST(UnitsTest, Durations) {
  EXPECT_DOUBLE_EQ(*parseDurationSeconds("30"), 30);
  EXPECT_DOUBLE_EQ(*parseDurationSeconds("500ms"), 0.5);
  EXPECT_DOUBLE_EQ(*parseDurationSeconds("2m"), 120);
  EXPECT_FALSE(parseDurationSeconds("0s").isOk());
  EXPECT_FALSE(parseDurationSeconds("soon").isOk());
  EXPECT_EQ(formatBytes(64u << 20), "64 MiB");
  EXPECT_EQ(formatBytes(1000), "1000 B");
}

}  // namespace
}  // namespace ccscope::core
