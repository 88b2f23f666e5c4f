#include <gtest/gtest.h>
#include "mlperf/mlperf.hpp"
TEST(MlperfParser, Empty) { EXPECT_EQ(scalescope::mlperf::parse_mllog("").mllog_lines, 0u); }
