// Quantity parsing with 128-bit integer arithmetic: the number is read as an integer mantissa
// with a count of fractional digits, scaled by its suffix, then divided with rounding up.
#include "scheduler/api/quantity.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "scheduler/util/strings.h"

namespace tessel {
namespace {

using Int128 = __int128;

// More significant digits than this cannot matter for an int64 result; later fractional digits
// only decide rounding (kept as a "sticky" non-zero flag).
constexpr int kMaxDigits = 36;
constexpr Int128 kInt64Max = std::numeric_limits<int64_t>::max();

struct Parsed {
  bool negative = false;
  Int128 mantissa = 0;    // all kept digits as one integer
  int fraction_digits = 0;
  bool sticky = false;    // dropped digits were not all zero
  int pow10 = 0;          // decimal scale from suffix or exponent
  int pow2 = 0;           // binary scale from suffix
  bool too_large = false; // more integer digits, or a larger exponent, than int64 can hold
};

absl::Status Invalid(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(
      StrCat("quantity \"", text, "\" is not valid: ", why));
}

// A well-formed quantity whose value lies beyond int64: OutOfRange, so that the saturating
// parsers can tell it from text that is not a quantity at all.
absl::Status TooLarge(std::string_view text, std::string_view why) {
  return absl::OutOfRangeError(StrCat("quantity \"", text, "\" is not valid: ", why));
}

absl::StatusOr<Parsed> Lex(std::string_view text) {
  Parsed p;
  size_t i = 0;
  if (text.empty()) return Invalid(text, "empty string");
  if (text[i] == '+' || text[i] == '-') {
    p.negative = text[i] == '-';
    ++i;
  }
  int digits = 0;       // significant digits kept
  int seen = 0;         // digits read at all
  bool in_fraction = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c == '.') {
      if (in_fraction) return Invalid(text, "more than one decimal point");
      in_fraction = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    ++seen;
    int d = c - '0';
    if (digits == 0 && d == 0) {
      if (in_fraction) ++p.fraction_digits;
      continue;  // leading zeros carry no information
    }
    if (digits >= kMaxDigits) {
      if (!in_fraction) p.too_large = true;
      if (d != 0) p.sticky = true;
      continue;
    }
    p.mantissa = p.mantissa * 10 + d;
    ++digits;
    if (in_fraction) ++p.fraction_digits;
  }
  if (seen == 0) return Invalid(text, "no digits");
  std::string_view suffix = text.substr(i);
  if (suffix.empty()) return p;

  static constexpr struct {
    std::string_view name;
    int pow10;
    int pow2;
  } kSuffixes[] = {
      {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
      {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},
      {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
  };
  for (const auto& s : kSuffixes) {
    if (suffix == s.name) {
      p.pow10 = s.pow10;
      p.pow2 = s.pow2;
      return p;
    }
  }
  if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view exp = suffix.substr(1);
    size_t j = 0;
    bool neg = false;
    if (j < exp.size() && (exp[j] == '+' || exp[j] == '-')) neg = exp[j++] == '-';
    if (j == exp.size()) return Invalid(text, "exponent has no digits");
    int value = 0;
    for (; j < exp.size(); ++j) {
      if (!std::isdigit(static_cast<unsigned char>(exp[j]))) {
        return Invalid(text, StrCat("unknown suffix \"", suffix, "\""));
      }
      value = std::min(value * 10 + (exp[j] - '0'), 1001);
    }
    if (value > 1000 && neg) return Invalid(text, "exponent out of range");
    if (value > 1000) p.too_large = true;
    p.pow10 = neg ? -value : value;
    return p;
  }
  return Invalid(text, StrCat("unknown suffix \"", suffix, "\""));
}

// mantissa * 2^pow2 * 10^(pow10 + extra10 - fraction_digits), rounded away from zero.
absl::StatusOr<int64_t> Scale(std::string_view text, const Parsed& p, int extra10) {
  Int128 num = p.mantissa;
  if (num == 0 && !p.sticky) return 0;
  if (p.too_large) return TooLarge(text, "out of range for a 64-bit integer");
  // Multiply by 2^pow2 first; the mantissa has at most 36 digits (< 2^120) so check as we go.
  const Int128 kLimit = Int128(1) << 124;
  for (int k = 0; k < p.pow2; ++k) {
    num <<= 1;
    if (num > kLimit) return TooLarge(text, "out of range for a 64-bit integer");
  }
  int exp10 = p.pow10 + extra10 - p.fraction_digits;
  bool sticky = p.sticky;
  while (exp10 > 0) {
    // Checked before multiplying: 10 * kLimit itself would overflow Int128.
    if (num > kLimit / 10) return TooLarge(text, "out of range for a 64-bit integer");
    num *= 10;
    --exp10;
  }
  while (exp10 < 0 && num != 0) {
    if (num % 10 != 0) sticky = true;
    num /= 10;
    ++exp10;
  }
  if (sticky) num += 1;  // round up: the exact value was strictly above num
  if (num > kInt64Max) return TooLarge(text, "out of range for a 64-bit integer");
  int64_t out = static_cast<int64_t>(num);
  return p.negative ? -out : out;
}

}  // namespace

absl::StatusOr<int64_t> ParseMilli(std::string_view text) {
  absl::StatusOr<Parsed> p = Lex(text);
  if (!p.ok()) return p.status();
  return Scale(text, *p, 3);
}

absl::StatusOr<int64_t> ParseValue(std::string_view text) {
  absl::StatusOr<Parsed> p = Lex(text);
  if (!p.ok()) return p.status();
  return Scale(text, *p, 0);
}

namespace {

absl::StatusOr<int64_t> Saturate(std::string_view text, absl::StatusOr<int64_t> parsed) {
  if (parsed.ok() || parsed.status().code() != absl::StatusCode::kOutOfRange) return parsed;
  // The sign is the only thing to read again: the text lexed as far as its magnitude.
  const bool negative = !text.empty() && text[0] == '-';
  return negative ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

}  // namespace

absl::StatusOr<int64_t> ParseMilliSaturating(std::string_view text) {
  return Saturate(text, ParseMilli(text));
}

absl::StatusOr<int64_t> ParseValueSaturating(std::string_view text) {
  return Saturate(text, ParseValue(text));
}

std::string FormatMilli(int64_t milli) {
  if (milli % 1000 == 0) return StrCat(milli / 1000);
  return StrCat(milli, "m");
}

}  // namespace tessel
