// Pins the one quantile definition (base/quantile.hpp): linear between the
// closest ranks (type 7), the median of an even count the mean of the middle two.
#include "base/quantile.hpp"

#include <cstdint>

#include <gtest/gtest.h>

namespace scalescope::trace {
namespace {

TEST(Quantile, MedianIsTheMiddleOrTheMeanOfTheMiddleTwo) {
  EXPECT_EQ(median(std::vector<double>{}), 0);
  EXPECT_EQ(median(std::vector<double>{7}), 7);
  EXPECT_EQ(median(std::vector<double>{3, 1, 2}), 2);
  // Not the upper middle (analyze's kernel medians took 3) nor the lower (2).
  EXPECT_EQ(median(std::vector<double>{10, 1, 3, 2}), 2.5);
  EXPECT_EQ(median(std::vector<int64_t>{4, 1, 2, 3}), 2.5);
  // Large integers: no overflow in the mean.
  EXPECT_EQ(median(std::vector<int64_t>{int64_t{1} << 52, (int64_t{1} << 52) + 2}),
            static_cast<double>((int64_t{1} << 52) + 1));
}

TEST(Quantile, InterpolatesBetweenTheClosestRanks) {
  const std::vector<double> v = {5, 1, 4, 2, 3};
  EXPECT_EQ(quantile(v, 0), 1);
  EXPECT_EQ(quantile(v, 1), 5);
  EXPECT_EQ(quantile(v, 0.5), 3);
  EXPECT_DOUBLE_EQ(quantile(v, 0.25), 2);
  EXPECT_DOUBLE_EQ(quantile(v, 0.9), 4.6);  // numpy.quantile([1,2,3,4,5], 0.9)
  // p95 of 1..20: position 18.05 -> 19.05 (nearest rank would say 19).
  std::vector<double> twenty;
  for (int i = 1; i <= 20; ++i) twenty.push_back(i);
  EXPECT_DOUBLE_EQ(quantile(twenty, 0.95), 19.05);
  EXPECT_EQ(quantile(std::vector<double>{}, 0.5), 0);
  EXPECT_EQ(quantile(v, 2), 5);  // clamped
}

TEST(Quantile, MedianInPlaceAgreesWithQuantileHalf) {
  std::vector<double> v;
  for (int n = 1; n < 40; ++n) {
    v.push_back(static_cast<double>((n * 7919) % 101) / 7);
    std::vector<double> copy = v;
    EXPECT_DOUBLE_EQ(median_in_place(copy), quantile(v, 0.5)) << n;
  }
}

}  // namespace
}  // namespace scalescope::trace
