// Quantity parsing: every suffix, rounding, signs, exponents, overflow and garbage.
#include <catch2/catch.hpp>

#include "scheduler/api/quantity.h"

namespace tessel {
namespace quantity_test {

struct Case {
  const char* text;
  int64_t milli;
  int64_t value;
};

TEST_CASE("ParseMilli and ParseValue accept the whole Kubernetes grammar", "[quantity]") {
  const Case cases[] = {
      {"0", 0, 0},
      {"1", 1000, 1},
      {"100m", 100, 1},                    // Value rounds 0.1 up to 1
      {"1500m", 1500, 2},
      {"1.5", 1500, 2},
      {".5", 500, 1},
      {"0.5", 500, 1},
      {"1.", 1000, 1},
      {"+2", 2000, 2},
      {"-2", -2000, -2},
      {"-1.5", -1500, -2},                 // away from zero, like Kubernetes
      {"1n", 1, 1},                        // 1e-9 rounds up to 1 milli
      {"1000000n", 1, 1},
      {"1500000n", 2, 1},                  // 1.5 milli rounds up
      {"1u", 1, 1},
      {"1000u", 1, 1},
      {"250000u", 250, 1},
      {"1m", 1, 1},
      {"1k", 1000000, 1000},
      {"1M", 1000000000, 1000000},
      {"1G", 1000000000000, 1000000000},
      {"1T", 1000000000000000, 1000000000000},
      {"1P", 1000000000000000000, 1000000000000000},
      {"1E", 0, 1000000000000000000},      // milli overflows; checked below
      {"1Ki", 1024000, 1024},
      {"1Mi", 1048576000, 1048576},
      {"1Gi", 1073741824000, 1073741824},
      {"1.5Gi", 1610612736000, 1610612736},
      {"1Ti", 1099511627776000, 1099511627776},
      {"1Pi", 1125899906842624000, 1125899906842624},
      {"1Ei", 0, 1152921504606846976},     // milli overflows; checked below
      {"0.1Ki", 102400, 103},              // 102.4 rounds up
      {"2e3", 2000000, 2000},
      {"2E3", 2000000, 2000},
      {"1e-3", 1, 1},
      {"5e-1", 500, 1},
      {"1.5e2", 150000, 150},
      {"12e+1", 120000, 120},
      {"007", 7000, 7},
      {"0.001", 1, 1},
      {"0.0001", 1, 1},                    // rounds up to 1 milli
      {"128974848", 128974848000, 128974848},
      {"129e6", 129000000000, 129000000},
      {"123Mi", 128974848000, 128974848},
      {"9223372036854775807", 0, 9223372036854775807},
      {"0.000000000000000000000000000000000000000001", 1, 1},  // beyond 36 digits: sticky rounding
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    auto value = ParseValue(c.text);
    REQUIRE(value.ok());
    CHECK(*value == c.value);
    if (c.milli != 0 || std::string_view(c.text) == "0") {
      auto milli = ParseMilli(c.text);
      REQUIRE(milli.ok());
      CHECK(*milli == c.milli);
    }
  }
}

TEST_CASE("quantities outside int64 are errors, not wrapped values", "[quantity]") {
  const char* cases[] = {"1E", "1Ei", "9223372036854775807", "10E", "8Ei", "9223372036854775808",
                         "1e19", "1e1000", "99999999999999999999999999999999999999999",
                         // found by tests/fuzz: the scaling overflowed 128 bits (UB) before
                         // its range check
                         "19741E848", "17e37"};
  for (const char* text : cases) {
    CAPTURE(text);
    auto milli = ParseMilli(text);
    REQUIRE_FALSE(milli.ok());
    CHECK(milli.status().message().find(text) != std::string_view::npos);
  }
  CHECK_FALSE(ParseValue("16Ei").ok());
  CHECK_FALSE(ParseValue("1e19").ok());
}

TEST_CASE("garbage is rejected with the offending text quoted", "[quantity]") {
  const char* cases[] = {"",    "ten", "1.2.3", "5Gb", "1 Gi", "Gi",   "1i",   "1KiB", "--1",
                         "+",   ".",   "1e",    "1e+", "e3",   "1mm",  "1ki",  "0x10", "1,5",
                         "1.5.", " 1", "1 ",    "1e3.5", "1Mi1", "NaN", "inf"};
  for (const char* text : cases) {
    CAPTURE(text);
    auto v = ParseMilli(text);
    REQUIRE_FALSE(v.ok());
    CHECK(v.status().message().find(std::string("\"") + text + "\"") != std::string_view::npos);
  }
}

TEST_CASE("FormatMilli prints whole units without a suffix", "[quantity]") {
  CHECK(FormatMilli(2000) == "2");
  CHECK(FormatMilli(1500) == "1500m");
  CHECK(FormatMilli(0) == "0");
}

}  // namespace quantity_test
}  // namespace tessel
