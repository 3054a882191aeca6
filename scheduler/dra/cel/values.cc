// Kubernetes quantities and semantic versions with upstream's exact semantics, and the small
// text helpers (UTF-8, Go's float formatting) the evaluator needs. Learned from
// k8s.io/apimachinery/pkg/api/resource (ParseQuantity, int64Amount) and blang/semver v4.
#include "scheduler/dra/cel/values.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include "absl/strings/ascii.h"
#include "scheduler/util/strings.h"

namespace tessel::dra::cel {
namespace {

using Int128 = __int128;
constexpr int kMaxDigits = 38;  // what __int128 holds for certain

bool AllDigits(std::string_view s) { return std::all_of(s.begin(), s.end(), absl::ascii_isdigit); }

Int128 Pow10(int n) {
  Int128 r = 1;
  for (int i = 0; i < n; ++i) r *= 10;
  return r;
}

int DigitCount(Int128 v) {
  if (v < 0) v = -v;
  int n = 0;
  while (v != 0) {
    v /= 10;
    ++n;
  }
  return n;
}

// |v| * 10^n, or nullopt when it leaves int128's 38 safe digits.
std::optional<Int128> ScaleUp(Int128 v, int n) {
  if (v == 0) return Int128{0};
  if (n < 0 || DigitCount(v) + n > kMaxDigits) return std::nullopt;
  return v * Pow10(n);
}

// ---- Magnitudes beyond 128 bits (base 10^9 limbs, least significant first) ----------------

constexpr uint32_t kLimb = 1'000'000'000;

void Trim(BigMagnitude& m) {
  while (!m.empty() && m.back() == 0) m.pop_back();
}

void MulSmall(BigMagnitude& m, uint32_t factor) {
  uint64_t carry = 0;
  for (uint32_t& limb : m) {
    uint64_t v = uint64_t{limb} * factor + carry;
    limb = static_cast<uint32_t>(v % kLimb);
    carry = v / kLimb;
  }
  while (carry != 0) {
    m.push_back(static_cast<uint32_t>(carry % kLimb));
    carry /= kLimb;
  }
}

void AddSmall(BigMagnitude& m, uint32_t v) {
  for (size_t i = 0; v != 0; ++i) {
    if (i == m.size()) m.push_back(0);
    uint64_t sum = uint64_t{m[i]} + v;
    m[i] = static_cast<uint32_t>(sum % kLimb);
    v = static_cast<uint32_t>(sum / kLimb);
  }
}

BigMagnitude BigFromDigits(std::string_view digits) {
  BigMagnitude m;
  for (size_t end = digits.size(); end > 0;) {
    size_t begin = end >= 9 ? end - 9 : 0;
    uint32_t limb = 0;
    for (size_t i = begin; i < end; ++i) limb = limb * 10 + (digits[i] - '0');
    m.push_back(limb);
    end = begin;
  }
  Trim(m);
  return m;
}

BigMagnitude BigFromInt128(Int128 v) {
  BigMagnitude m;
  if (v < 0) v = -v;
  for (; v != 0; v /= kLimb) m.push_back(static_cast<uint32_t>(v % kLimb));
  return m;
}

// m * 10^k.
BigMagnitude ShiftDecimal(BigMagnitude m, int64_t k) {
  if (m.empty()) return m;
  m.insert(m.begin(), static_cast<size_t>(k / 9), 0);
  for (int64_t i = 0; i < k % 9; ++i) MulSmall(m, 10);
  return m;
}

// ceil(m / 10^k).
BigMagnitude DivPow10Ceil(BigMagnitude m, int64_t k) {
  bool remainder = false;
  size_t limbs = static_cast<size_t>(std::min<int64_t>(k / 9, static_cast<int64_t>(m.size())));
  for (size_t i = 0; i < limbs; ++i) remainder |= m[i] != 0;
  m.erase(m.begin(), m.begin() + limbs);
  if (k / 9 > static_cast<int64_t>(limbs)) m.clear();
  uint32_t divisor = 1;
  for (int64_t i = 0; i < k % 9; ++i) divisor *= 10;
  uint64_t rest = 0;
  for (size_t i = m.size(); i-- > 0;) {
    uint64_t cur = rest * kLimb + m[i];
    m[i] = static_cast<uint32_t>(cur / divisor);
    rest = cur % divisor;
  }
  Trim(m);
  if (remainder || rest != 0) AddSmall(m, 1);
  return m;
}

int BigCompare(const BigMagnitude& a, const BigMagnitude& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = a.size(); i-- > 0;) {
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

BigMagnitude BigAdd(const BigMagnitude& a, const BigMagnitude& b) {
  BigMagnitude out(std::max(a.size(), b.size()) + 1, 0);
  uint32_t carry = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t v = uint64_t{carry} + (i < a.size() ? a[i] : 0) + (i < b.size() ? b[i] : 0);
    out[i] = static_cast<uint32_t>(v % kLimb);
    carry = static_cast<uint32_t>(v / kLimb);
  }
  Trim(out);
  return out;
}

// a - b for a >= b.
BigMagnitude BigSub(const BigMagnitude& a, const BigMagnitude& b) {
  BigMagnitude out = a;
  int64_t borrow = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t v = int64_t{out[i]} - borrow - (i < b.size() ? b[i] : 0);
    borrow = v < 0;
    out[i] = static_cast<uint32_t>(v + (borrow ? kLimb : 0));
  }
  Trim(out);
  return out;
}

int64_t BigDigitCount(const BigMagnitude& m) {
  if (m.empty()) return 0;
  int64_t n = 9 * static_cast<int64_t>(m.size() - 1);
  for (uint32_t top = m.back(); top != 0; top /= 10) ++n;
  return n;
}

BigMagnitude MagnitudeOf(const KubeQuantity& q) { return q.big ? *q.big : BigFromInt128(q.unscaled); }
int64_t DigitsOf(const KubeQuantity& q) { return q.big ? BigDigitCount(*q.big) : DigitCount(q.unscaled); }

// A decimal quantity from a sign and a magnitude: in `unscaled` when it fits 38 digits.
std::optional<KubeQuantity> MakeDecimal(bool negative, BigMagnitude magnitude, int64_t exponent) {
  if (magnitude.empty()) return KubeQuantity{0, 0, true};
  if (exponent < INT32_MIN || exponent > INT32_MAX) return std::nullopt;
  KubeQuantity q{negative ? -1 : 1, static_cast<int32_t>(exponent), true};
  if (BigDigitCount(magnitude) <= kMaxDigits) {
    Int128 v = 0;
    for (size_t i = magnitude.size(); i-- > 0;) v = v * kLimb + magnitude[i];
    q.unscaled = negative ? -v : v;
  } else {
    q.big = std::make_shared<const BigMagnitude>(std::move(magnitude));
  }
  return q;
}

// Go's strconv.ParseInt(s, 10, 64): an optional sign, then decimal digits.
std::optional<int64_t> ParseGoInt64(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || !AllDigits(s)) return std::nullopt;
  Int128 v = 0;
  for (char c : s) {
    v = v * 10 + (c - '0');
    if (v > Int128{kInt64Max} + 1) return std::nullopt;
  }
  if (negative) v = -v;
  if (v > kInt64Max || v < kInt64Min) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<uint64_t> ParseGoUint64(std::string_view s) {
  if (s.empty() || !AllDigits(s)) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (__builtin_mul_overflow(v, uint64_t{10}, &v) ||
        __builtin_add_overflow(v, static_cast<uint64_t>(c - '0'), &v)) {
      return std::nullopt;
    }
  }
  return v;
}

struct QuantityText {
  bool positive = true;
  std::string_view num, denom, suffix;
};

// parseQuantityString: sign, integer digits (leading zeros dropped), fraction, suffix.
std::optional<QuantityText> SplitQuantity(std::string_view str) {
  QuantityText t;
  size_t pos = 0, end = str.size();
  if (pos < end && (str[0] == '-' || str[0] == '+')) {
    t.positive = str[0] == '+';
    ++pos;
  }
  while (pos < end && str[pos] == '0') ++pos;
  if (pos >= end) {
    t.num = "0";
    return t;
  }
  size_t start = pos;
  while (pos < end && absl::ascii_isdigit(str[pos])) ++pos;
  t.num = str.substr(start, pos - start);
  if (pos >= end) return t;
  if (t.num.empty()) t.num = "0";
  if (str[pos] == '.') {
    ++pos;
    start = pos;
    while (pos < end && absl::ascii_isdigit(str[pos])) ++pos;
    t.denom = str.substr(start, pos - start);
    if (pos >= end) return t;
  }
  size_t suffix_start = pos;
  while (pos < end && std::string_view("eEinumkKMGTP").find(str[pos]) != std::string_view::npos) ++pos;
  if (pos < end && (str[pos] == '-' || str[pos] == '+')) ++pos;
  while (pos < end && absl::ascii_isdigit(str[pos])) ++pos;
  if (pos < end) return std::nullopt;  // ErrFormatWrong
  t.suffix = str.substr(suffix_start);
  return t;
}

struct Suffix {
  int base;  // 10 or 2
  int32_t exponent;
  bool binary;
};

std::optional<Suffix> InterpretSuffix(std::string_view s) {
  static constexpr std::pair<std::string_view, int> kDecimal[] = {
      {"n", -9}, {"u", -6}, {"m", -3}, {"", 0}, {"k", 3}, {"M", 6}, {"G", 9}, {"T", 12}, {"P", 15}, {"E", 18}};
  static constexpr std::pair<std::string_view, int> kBinary[] = {
      {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  for (const auto& [name, e] : kDecimal) {
    if (s == name) return Suffix{10, e, false};
  }
  for (const auto& [name, e] : kBinary) {
    if (s == name) return Suffix{2, e, true};
  }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    std::optional<int64_t> e = ParseGoInt64(s.substr(1));
    if (!e) return std::nullopt;
    return Suffix{10, static_cast<int32_t>(static_cast<uint32_t>(*e)), false};  // Go's int32()
  }
  return std::nullopt;
}

// Both as (magnitude digits, exponent) aligned to the smaller exponent; nullopt on overflow.
struct Aligned {
  Int128 a, b;
  int32_t exponent;
};
std::optional<Aligned> Align(const KubeQuantity& x, const KubeQuantity& y) {
  int32_t e = std::min(x.exponent, y.exponent);
  auto a = x.unscaled == 0 ? std::optional<Int128>(0) : ScaleUp(x.unscaled, x.exponent - e);
  auto b = y.unscaled == 0 ? std::optional<Int128>(0) : ScaleUp(y.unscaled, y.exponent - e);
  if (!a || !b) return std::nullopt;
  return Aligned{*a, *b, e};
}

std::optional<KubeQuantity> DecimalSum(const KubeQuantity& x, const KubeQuantity& y) {
  if (!x.big && !y.big) {
    std::optional<Aligned> al = Align(x, y);
    if (al && DigitCount(al->a + al->b) <= kMaxDigits) {
      return KubeQuantity{al->a + al->b, al->exponent, true};
    }
  }
  // Beyond 38 digits: the same sum on arbitrary-length magnitudes.
  if (x.Sign() == 0) return KubeQuantity{y.unscaled, y.exponent, true, false, y.big};
  if (y.Sign() == 0) return KubeQuantity{x.unscaled, x.exponent, true, false, x.big};
  int64_t e = std::min(x.exponent, y.exponent);
  if (std::max(x.exponent, y.exponent) - e > 100'000) return std::nullopt;
  BigMagnitude a = ShiftDecimal(MagnitudeOf(x), x.exponent - e);
  BigMagnitude b = ShiftDecimal(MagnitudeOf(y), y.exponent - e);
  if (x.Sign() == y.Sign()) return MakeDecimal(x.Sign() < 0, BigAdd(a, b), e);
  int c = BigCompare(a, b);
  if (c == 0) return KubeQuantity{0, 0, true};
  return c > 0 ? MakeDecimal(x.Sign() < 0, BigSub(a, b), e) : MakeDecimal(y.Sign() < 0, BigSub(b, a), e);
}

bool Int64Fits(Int128 v) { return v >= kInt64Min && v <= kInt64Max; }

// int64Amount.Add: false when the int64 fast path overflows (the caller goes decimal).
std::optional<KubeQuantity> Int64Add(KubeQuantity a, const KubeQuantity& b) {
  if (b.unscaled == 0) return a;
  if (a.unscaled == 0) return b;
  Int128 x = a.unscaled, y = b.unscaled;
  int32_t scale = a.exponent;
  if (a.exponent > b.exponent) {
    std::optional<Int128> s = ScaleUp(x, a.exponent - b.exponent);
    if (!s || !Int64Fits(*s)) return std::nullopt;
    x = *s;
    scale = b.exponent;
  } else if (a.exponent < b.exponent) {
    std::optional<Int128> s = ScaleUp(y, b.exponent - a.exponent);
    if (!s || !Int64Fits(*s)) return std::nullopt;
    y = *s;
  }
  if (!Int64Fits(x + y)) return std::nullopt;
  return KubeQuantity{x + y, scale, false};
}

// The pre-release and build parts of blang/semver.
bool IsAlphaNum(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '-';
  });
}
bool HasLeadingZero(std::string_view s) { return s.size() > 1 && s[0] == '0'; }

// Go's strings.SplitN(s, sep, max_parts), handing each part to `f` (which returns false to stop)
// instead of building a vector: a device's versions are checked on every evaluation.
template <typename F>
void ForEachPart(std::string_view s, char sep, size_t max_parts, F&& f) {
  for (size_t n = 1;; ++n) {
    size_t i = n < max_parts ? s.find(sep) : std::string_view::npos;
    if (!f(s.substr(0, i)) || i == std::string_view::npos) return;
    s.remove_prefix(i + 1);
  }
}

std::optional<SemanticVersion> ParseStrict(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::array<std::string_view, 3> parts;
  size_t count = 0;
  ForEachPart(s, '.', 3, [&](std::string_view p) {
    parts[count++] = p;
    return true;
  });
  if (count != 3) return std::nullopt;
  SemanticVersion v;
  for (int i = 0; i < 2; ++i) {
    if (!AllDigits(parts[i]) || HasLeadingZero(parts[i])) return std::nullopt;
    std::optional<uint64_t> n = ParseGoUint64(parts[i]);
    if (!n) return std::nullopt;
    (i == 0 ? v.major : v.minor) = *n;
  }
  std::string_view patch = parts[2];
  std::string_view build, pre;
  bool has_build = false, has_pre = false;
  if (size_t b = patch.find('+'); b != std::string_view::npos) {
    build = patch.substr(b + 1);
    patch = patch.substr(0, b);
    has_build = true;
  }
  if (size_t p = patch.find('-'); p != std::string_view::npos) {
    pre = patch.substr(p + 1);
    patch = patch.substr(0, p);
    has_pre = true;
  }
  if (!AllDigits(patch) || HasLeadingZero(patch)) return std::nullopt;
  std::optional<uint64_t> n = ParseGoUint64(patch);
  if (!n) return std::nullopt;
  v.patch = *n;
  bool valid = true;
  if (has_pre) {
    ForEachPart(pre, '.', SIZE_MAX, [&](std::string_view part) {
      SemanticVersion::PreRelease pr{std::string(part), std::nullopt};
      if (AllDigits(part)) {
        pr.number = ParseGoUint64(part);
        valid = !part.empty() && !HasLeadingZero(part) && pr.number.has_value();
      } else {
        valid = IsAlphaNum(part);
      }
      v.pre.push_back(std::move(pr));
      return valid;
    });
  }
  if (valid && has_build) {
    ForEachPart(build, '.', SIZE_MAX, [&](std::string_view part) {
      valid = !part.empty() && IsAlphaNum(part);
      return valid;
    });
  }
  if (!valid) return std::nullopt;
  return v;
}

int Cmp(uint64_t a, uint64_t b) { return a < b ? -1 : a > b ? 1 : 0; }

}  // namespace

std::optional<KubeQuantity> KubeQuantity::Parse(std::string_view str) {
  if (str.empty()) return std::nullopt;
  if (str == "0") return KubeQuantity{};
  std::optional<QuantityText> t = SplitQuantity(str);
  if (!t) return std::nullopt;
  std::optional<Suffix> suffix = InterpretSuffix(t->suffix);
  if (!suffix) return std::nullopt;
  const int num_digits = static_cast<int>(t->num.size() + t->denom.size());

  // The int64 fast path: the result keeps an int64 and a scale.
  int64_t precision = 0, scale = 0;
  Int128 mantissa = 1;
  if (!suffix->binary) {
    scale = suffix->exponent;
    precision = 18 - num_digits;
  } else if (suffix->exponent >= 0 && t->denom.empty()) {
    mantissa = Int128{1} << suffix->exponent;
    precision = 15 - static_cast<int64_t>(t->num.size()) - suffix->exponent * 3 / 10 - 1;
  } else {
    precision = -1;
  }
  if (precision >= 0) {
    scale -= static_cast<int64_t>(t->denom.size());
    if (scale >= -9) {
      Int128 value = 0;
      for (char c : t->num) value = value * 10 + (c - '0');
      for (char c : t->denom) value = value * 10 + (c - '0');
      Int128 result = value * mantissa;
      if (Int64Fits(value) && Int64Fits(result)) {
        return KubeQuantity{t->positive ? result : -result, static_cast<int32_t>(scale), false};
      }
    }
  }

  // The inf.Dec path: exact, rounded up (away from zero) to nano units, binary capped at int64.
  std::string digits(t->num);
  digits.append(t->denom);
  size_t first = digits.find_first_not_of('0');
  digits.erase(0, first == std::string::npos ? digits.size() : first);
  int64_t exponent = -static_cast<int64_t>(t->denom.size());
  if (!suffix->binary) exponent += suffix->exponent;
  while (!digits.empty() && digits.back() == '0') {
    digits.pop_back();
    ++exponent;
  }
  if (digits.empty()) return KubeQuantity{0, 0, true};
  if (suffix->binary &&
      static_cast<int64_t>(digits.size()) + exponent - 1 + suffix->exponent * 30103 / 100000 >= 19) {
    // At least 10^19 (2^k >= 10^floor(k log10 2)): beyond int64, so capped like upstream.
    return KubeQuantity{t->positive ? Int128{kInt64Max} : -Int128{kInt64Max}, 0, true};
  }
  // The magnitude, times 2^k for a binary suffix, rounded up to 10^-9 when it is finer.
  BigMagnitude magnitude = BigFromDigits(digits);
  if (suffix->binary) {
    for (int32_t k = suffix->exponent; k > 0; k -= std::min(k, 20)) MulSmall(magnitude, uint32_t{1} << std::min(k, 20));
  }
  if (exponent < -9) {
    magnitude = DivPow10Ceil(std::move(magnitude), -9 - exponent);
    exponent = -9;
  }
  std::optional<KubeQuantity> made = MakeDecimal(!t->positive, std::move(magnitude), exponent);
  if (!made) return std::nullopt;
  KubeQuantity q = std::move(*made);
  if (suffix->binary && Compare(q, FromInt(t->positive ? kInt64Max : -kInt64Max)) * (t->positive ? 1 : -1) > 0) {
    q = KubeQuantity{t->positive ? Int128{kInt64Max} : -Int128{kInt64Max}, 0, true};
  }
  return q;
}

int KubeQuantity::Compare(const KubeQuantity& a, const KubeQuantity& b) {
  if (a.Sign() != b.Sign()) return a.Sign() < b.Sign() ? -1 : 1;
  if (a.Sign() == 0) return 0;
  // Same sign: compare magnitudes by order of magnitude first, then digits.
  int64_t oa = DigitsOf(a) + int64_t{a.exponent}, ob = DigitsOf(b) + int64_t{b.exponent};
  int magnitude_order;
  if (oa != ob) {
    magnitude_order = oa < ob ? -1 : 1;
  } else if (a.big || b.big) {
    // Same order of magnitude: the exponents differ by less than the longer one's digits.
    int64_t e = std::min(a.exponent, b.exponent);
    magnitude_order = BigCompare(ShiftDecimal(MagnitudeOf(a), a.exponent - e), ShiftDecimal(MagnitudeOf(b), b.exponent - e));
  } else {
    Int128 ma = a.unscaled < 0 ? -a.unscaled : a.unscaled;
    Int128 mb = b.unscaled < 0 ? -b.unscaled : b.unscaled;
    std::optional<Aligned> al = Align(KubeQuantity{ma, a.exponent}, KubeQuantity{mb, b.exponent});
    // Same order of magnitude: alignment adds at most 38 digits minus the shorter's length, and
    // both fit; should it still overflow, the digit counts were equal, so this cannot happen.
    magnitude_order = !al ? 0 : al->a < al->b ? -1 : al->a > al->b ? 1 : 0;
  }
  return a.Sign() > 0 ? magnitude_order : -magnitude_order;
}

std::optional<KubeQuantity> KubeQuantity::Add(const KubeQuantity& a, const KubeQuantity& b) {
  std::optional<KubeQuantity> sum;
  if (!a.decimal && !b.decimal) sum = Int64Add(a, b);
  if (!sum) sum = DecimalSum(a, b);
  if (sum) sum->boxed = true;
  return sum;
}

std::optional<KubeQuantity> KubeQuantity::Sub(const KubeQuantity& a, const KubeQuantity& b) {
  if (!a.decimal && !b.decimal) {
    // int64Amount.Sub adds the negated value; Go's negation of MinInt64 wraps to itself.
    Int128 negated = b.unscaled == kInt64Min ? b.unscaled : -b.unscaled;
    if (std::optional<KubeQuantity> fast = Int64Add(a, KubeQuantity{negated, b.exponent, false})) {
      fast->boxed = true;
      return fast;
    }
  }
  std::optional<KubeQuantity> diff = DecimalSum(a, KubeQuantity{-b.unscaled, b.exponent, b.decimal, false, b.big});
  if (diff) diff->boxed = true;
  return diff;
}

std::optional<int64_t> KubeQuantity::AsInt64() const {
  if (decimal) return std::nullopt;
  if (exponent == 0) return static_cast<int64_t>(unscaled);
  if (exponent < 0) return std::nullopt;
  std::optional<Int128> v = unscaled == 0 ? std::optional<Int128>(0) : ScaleUp(unscaled, exponent);
  if (!v || !Int64Fits(*v)) return std::nullopt;
  return static_cast<int64_t>(*v);
}

std::optional<SemanticVersion> SemanticVersion::Parse(std::string_view text, bool normalize) {
  if (!normalize) return ParseStrict(text);
  if (!text.empty() && text[0] == 'v') text.remove_prefix(1);
  std::vector<std::string> parts;
  ForEachPart(text, '.', 3, [&](std::string_view p) {
    std::string part(p);
    if (part.size() > 1) {
      size_t first = part.find_first_not_of('0');
      part.erase(0, first == std::string::npos ? part.size() : first);
      if (part.empty() || !absl::ascii_isdigit(part[0])) part = StrCat("0", part);
    }
    parts.push_back(std::move(part));
    return true;
  });
  if (parts.size() < 3) {
    if (parts.back().find_first_of("+-") != std::string::npos) return std::nullopt;
    while (parts.size() < 3) parts.emplace_back("0");
  }
  return ParseStrict(StrCat(parts[0], ".", parts[1], ".", parts[2]));
}

int SemanticVersion::Compare(const SemanticVersion& a, const SemanticVersion& b) {
  if (int c = Cmp(a.major, b.major)) return c;
  if (int c = Cmp(a.minor, b.minor)) return c;
  if (int c = Cmp(a.patch, b.patch)) return c;
  if (a.pre.empty() || b.pre.empty()) return a.pre.empty() == b.pre.empty() ? 0 : a.pre.empty() ? 1 : -1;
  for (size_t i = 0; i < a.pre.size() && i < b.pre.size(); ++i) {
    const PreRelease &x = a.pre[i], &y = b.pre[i];
    int c;
    if (x.number.has_value() != y.number.has_value()) {
      c = x.number ? -1 : 1;  // numeric parts sort before alphanumeric ones
    } else if (x.number) {
      c = Cmp(*x.number, *y.number);
    } else {
      c = x.text < y.text ? -1 : x.text > y.text ? 1 : 0;
    }
    if (c != 0) return c;
  }
  return Cmp(a.pre.size(), b.pre.size());
}

std::string_view Value::TypeName() const {
  static constexpr std::string_view kNames[] = {"null_type", "bool",     "int",    "uint",
                                                "double",    "string",   "list",   "map",
                                                "Quantity",  "Semver",   "kubernetes.DRADevice",
                                                "error"};
  return kNames[v.index()];
}

Value NoSuchOverload(std::string_view function) {
  return Error(StrCat("no such overload: ", function));
}

Value AttributeToValue(const AttributeValue& attribute) {
  return std::visit(
      [](const auto& a) -> Value {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, SemVer>) {
          std::optional<SemanticVersion> v = SemanticVersion::Parse(a.text);
          if (!v) return Error(StrCat("parse semantic version: invalid version \"", a.text, "\""));
          return Value{std::make_shared<const SemanticVersion>(std::move(*v))};
        } else {
          return Value{a};
        }
      },
      attribute);
}

std::u32string DecodeUtf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) {
      out.push_back(0xFFFD);  // as Go's []rune does with invalid bytes
      ++i;
      continue;
    }
    char32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

std::string EncodeUtf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

int64_t CodePointCount(std::string_view s) {
  int64_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string FormatDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, end - buf);  // "-d.ddde+XX"
  bool negative = sci[0] == '-';
  if (negative) sci.remove_prefix(1);
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits.push_back(c);
  }
  int exp = std::stoi(std::string(sci.substr(e + 1)));
  // Built with fmt rather than std::string's operator+: GCC 12 at -O3 reports a false -Wrestrict
  // on the inlined concatenations (GCC bug 105329).
  std::string_view sign = negative ? "-" : "";
  if (exp < -4 || exp >= 6) {
    std::string_view rest = std::string_view(digits).substr(1);
    return fmt::format("{}{}{}{}e{}{:02d}", sign, digits[0], rest.empty() ? "" : ".", rest,
                       exp < 0 ? '-' : '+', std::abs(exp));
  }
  int point = exp + 1;  // digits before the decimal point
  std::string out;
  if (point <= 0) {
    out = fmt::format("{}0.{}{}", sign, std::string(-point, '0'), digits);
  } else if (point >= static_cast<int>(digits.size())) {
    out = fmt::format("{}{}{}", sign, digits, std::string(point - digits.size(), '0'));
  } else {
    std::string_view d(digits);
    out = fmt::format("{}{}.{}", sign, d.substr(0, point), d.substr(point));
  }
  return out;
}

}  // namespace tessel::dra::cel
