// Unit tests of the DRA CEL selector evaluator (scheduler/dra/cel): parsing, the checker's
// compile errors, each function family, CEL's error semantics, and public example selectors.
// The outcomes are cel-go's with Kubernetes' DRA environment (tests/cel/differential.py checks
// the same against the reference itself).
#include <catch2/catch.hpp>

#include <string>

#include "scheduler/dra/cel/cel.h"
#include "scheduler/dra/cel/values.h"

namespace cel_test {

using tessel::dra::AttributeValue;
using tessel::dra::DeviceView;
using tessel::dra::DomainMap;
using tessel::dra::SemVer;
using tessel::dra::cel::KubeQuantity;
using tessel::dra::cel::Selector;
using tessel::dra::cel::SemanticVersion;

struct Gpu {
  DomainMap<AttributeValue> attributes{
      {"gpu.nvidia.com",
       {{"type", std::string("gpu")},
        {"productName", std::string("NVIDIA A100-SXM4-40GB")},
        {"index", int64_t{3}},
        {"big", int64_t{9223372036854775807}},
        {"driverVersion", SemVer{"550.54.15"}},
        {"mig", false}}}};
  DomainMap<std::string> capacity{{"gpu.nvidia.com", {{"memory", "40Gi"}, {"cores", "1500m"}}}};
  DeviceView view() const {
    return DeviceView{.driver = "gpu.nvidia.com", .attributes = &attributes, .capacity = &capacity};
  }
};

// "true", "false", "error" or "compile_error".
std::string Outcome(const std::string& expression, const DeviceView& device) {
  absl::StatusOr<Selector> s = Selector::Compile(expression);
  if (!s.ok()) return "compile_error";
  absl::StatusOr<bool> m = s->Matches(device);
  if (!m.ok()) return "error";
  return *m ? "true" : "false";
}

TEST_CASE("CEL selectors evaluate as the reference does", "[cel]") {
  Gpu gpu;
  struct Case {
    std::string expression, want;
  };
  const Case cases[] = {
      // Public DeviceClass and claim selectors (NVIDIA, dra-example-driver, Kubernetes docs).
      {"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'", "true"},
      {"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'", "false"},
      {"device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0", "true"},
      {"device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))", "false"},
      {"device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))", "true"},
      {"device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('a100')", "true"},
      {"cel.bind(g, device.attributes['gpu.nvidia.com'], g.index == 3 && !g.mig)", "true"},
      // Missing domain: an empty map; missing name: an error; has() and `in` see presence.
      {"device.attributes['other.example.com'].model == 'x'", "error"},
      {"has(device.attributes['gpu.nvidia.com'].model)", "false"},
      {"has(device.attributes.anything)", "true"},
      {"'other.example.com' in device.attributes", "false"},
      {"'type' in device.attributes['gpu.nvidia.com']", "true"},
      // && and || are commutative over errors; ternary is not.
      {"device.attributes['gpu.nvidia.com'].model == 'x' || true", "true"},
      {"false && device.attributes['gpu.nvidia.com'].model == 'x'", "false"},
      {"device.attributes['gpu.nvidia.com'].model == 'x' && true", "error"},
      {"device.attributes['gpu.nvidia.com'].index ? true : false", "error"},
      // Heterogeneous equality; != never fails; ordering across types does.
      {"device.attributes['gpu.nvidia.com'].index == 'three'", "false"},
      {"device.attributes['gpu.nvidia.com'].index == 3.0", "true"},
      {"device.attributes['gpu.nvidia.com'].driverVersion != 3", "true"},
      {"device.attributes['gpu.nvidia.com'].driverVersion == 3", "error"},
      {"device.attributes['gpu.nvidia.com'].index < 'a'", "error"},
      {"device.attributes['gpu.nvidia.com'].index < 3.5", "true"},
      // int64 overflow is an error; uint underflow too.
      {"device.attributes['gpu.nvidia.com'].big + 1 > 0", "error"},
      {"-9223372036854775808 < 0", "true"},
      {"1u - 2u == 0u", "error"},
      {"7 / 0 == 0", "error"},
      // Strings by code point.
      {"'straße'.size() == 6 && 'straße'.charAt(4) == 'ß' && 'straße'.indexOf('e') == 5", "true"},
      {"'a-b-c'.split('-').join('/') == 'a/b/c' && 'a-b-c'.replace('-', '', 1) == 'ab-c'", "true"},
      {"' x '.trim() == 'x' && 'ABC'.lowerAscii() == 'abc' && 'abc'.substring(1, 2) == 'b'", "true"},
      {"'abc'.substring(2, 1) == ''", "error"},
      {"'A100-SXM4'.matches('^A[0-9]+')", "true"},
      // Quantities are exact, with upstream's int64/decimal representation for isInteger().
      {"quantity('1.5Gi') == quantity('1536Mi')", "true"},
      {"quantity('1000m').isInteger()", "false"},
      {"quantity('1k').asInteger() == 1000", "true"},
      {"quantity('0.1').add(quantity('0.2')).compareTo(quantity('300m')) == 0", "true"},
      {"quantity('1') == quantity('1').add(0)", "error"},
      {"sign(quantity('-1n')) == -1", "true"},
      {"isQuantity('1Ki') && !isQuantity('1K')", "true"},
      // Semantic versions as blang/semver orders them.
      {"semver('1.2.3-rc.10').isGreaterThan(semver('1.2.3-rc.9'))", "true"},
      {"semver('1.2.3-rc.1').isLessThan(semver('1.2.3'))", "true"},
      {"semver('v1.2', true).compareTo(semver('1.2.0')) == 0", "true"},
      {"isSemver('01.2.3')", "false"},
      {"semver('1.2').major() == 1", "error"},
      // List macros.
      {"[1, 2, 3].all(x, x > 0) && [1, 2, 3].exists_one(x, x == 2)", "true"},
      {"[1, 2, 3].map(x, x * 2).filter(x, x > 2) == [4, 6]", "true"},
      {"[1, 0].all(x, 1 / x > 0)", "error"},
      {"[0, 1].exists(x, 1 / x > 0)", "true"},
      {"device.attributes['gpu.nvidia.com'].exists(k, k == 'mig')", "true"},
      {"device.attributes['gpu.nvidia.com'].missing in []", "false"},
      // Kubernetes' lists library.
      {"[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3 && [1, 2, 3].sum() == 6 && [1, 2, 2].isSorted()", "true"},
      {"[].sum() == 0 && [1.5, 2.5].sum() == 4.0 && ['b', 'a'].min() == 'a'", "true"},
      {"[].max() == 0", "error"},
      {"[9223372036854775807, 1].sum() > 0", "error"},
      {"[1, 2, 1].lastIndexOf(1) == 2 && [1, 2].indexOf(3) == -1", "true"},
      {"device.attributes['gpu.nvidia.com'].type.includes('gpu') && [1, 2].includes(2)", "true"},
      // Compile errors: the output type, overloads, unknown names, unsupported forms.
      {"1 + 1", "compile_error"},
      {"device.driver", "compile_error"},
      {"device.driver == 1", "compile_error"},
      {"device.model == 'x'", "compile_error"},
      {"[1, 'a'].size() == 2", "compile_error"},
      {"int('x') == 1", "compile_error"},
      {"'a'.matches('(')", "compile_error"},
      {"device.attributes['d'].?x == 1", "compile_error"},
      {"'abc'.reverse() == 'cba'", "compile_error"},
      {"device.driver ==", "compile_error"},
  };
  for (const Case& c : cases) {
    INFO(c.expression);
    CHECK(Outcome(c.expression, gpu.view()) == c.want);
  }
}

TEST_CASE("CEL compile errors name the position and what is unsupported", "[cel]") {
  absl::StatusOr<Selector> s = Selector::Compile("device.driver == 'a' &&\n  device.nope == 1");
  REQUIRE_FALSE(s.ok());
  CHECK(std::string(s.status().message()) == "2:9: undefined field 'nope'");
  s = Selector::Compile("'x'.format([1]) == 'x'");
  REQUIRE_FALSE(s.ok());
  CHECK(std::string(s.status().message()).find("unsupported function 'format'") != std::string::npos);
  s = Selector::Compile("{'a': 1}.size() == 1");  // valid CEL that Tessel does not evaluate
  REQUIRE_FALSE(s.ok());
  CHECK(std::string(s.status().message()) == "1:1: unsupported syntax: map literals");
  s = Selector::Compile("[1].all(a, b, true)");
  REQUIRE_FALSE(s.ok());
  CHECK(std::string(s.status().message()).find("unsupported") != std::string::npos);
}

TEST_CASE("CEL: an evaluation beyond the DRA cost limit stops with an error", "[cel]") {
  const std::string ten = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]";
  std::string deep = "x1 + x2 + x3 + x4 + x5 + x6 > 0";
  for (int i = 6; i >= 1; --i) deep = ten + ".all(x" + std::to_string(i) + ", " + deep + ")";
  Gpu gpu;
  CHECK(Outcome(deep, gpu.view()) == "error");  // 10^6 steps of 6 calls: over 1,000,000
  std::string shallow = "x1 < 100";
  for (int i = 5; i >= 1; --i) shallow = ten + ".all(x" + std::to_string(i) + ", " + shallow + ")";
  CHECK(Outcome(shallow, gpu.view()) == "true");  // 10^5 steps: within the limit
  // The limit stops the whole evaluation: an || cannot absorb it.
  CHECK(Outcome("true || (" + deep + ")", gpu.view()) == "true");
  CHECK(Outcome("(" + deep + ") || true", gpu.view()) == "error");
}

TEST_CASE("CEL: an unparsable version attribute fails the device, whatever the expression", "[cel]") {
  DomainMap<AttributeValue> attributes{{"d", {{"v", SemVer{"1.2"}}}}};
  DeviceView view{.driver = "d", .attributes = &attributes, .capacity = nullptr};
  CHECK(Outcome("true", view) == "error");
  attributes["d"]["v"] = SemVer{"1.2.0"};
  CHECK(Outcome("true", view) == "true");
}

TEST_CASE("Kubernetes quantities: exact parse, compare and the int64 representation", "[cel]") {
  auto q = [](const char* text) { return KubeQuantity::Parse(text); };
  REQUIRE(q("1.5Gi"));
  CHECK(KubeQuantity::Compare(*q("1.5Gi"), *q("1536Mi")) == 0);
  CHECK(KubeQuantity::Compare(*q("1n"), *q("0")) == 1);
  CHECK(KubeQuantity::Compare(*q("1e-20"), *q("1n")) == 0);  // rounded up to nano
  CHECK(KubeQuantity::Compare(*q("8Ei"), *q("9223372036854775807")) == 0);  // binary is capped
  CHECK(KubeQuantity::Compare(*q("1e30"), *q("1e29")) == 1);  // decimal is not
  CHECK(q("1000m")->AsInt64() == std::nullopt);
  CHECK(q("2k")->AsInt64() == 2000);
  CHECK(q(".5")->exponent == -1);
  CHECK_FALSE(q("1K"));
  CHECK_FALSE(q(""));
  CHECK_FALSE(q("1.2.3"));
  CHECK(q("-")->Sign() == 0);  // upstream reads a lone sign as zero
}

TEST_CASE("Kubernetes quantities stay exact beyond 128 bits", "[cel]") {
  auto q = [](const char* text) { return *KubeQuantity::Parse(text); };
  const KubeQuantity long45 = q("123456789012345678901234567890123456789012345");
  CHECK(long45.big != nullptr);
  CHECK(KubeQuantity::Compare(long45, q("123456789012345678901234567890123456789012344")) == 1);
  CHECK(KubeQuantity::Compare(q("-123456789012345678901234567890123456789012345"), long45) == -1);
  // 10^30 + 10^-9 needs 40 digits: neither rounded nor an error.
  std::optional<KubeQuantity> sum = KubeQuantity::Add(q("1e30"), q("1n"));
  REQUIRE(sum);
  CHECK(KubeQuantity::Compare(*sum, q("1000000000000000000000000000000.000000001")) == 0);
  CHECK(KubeQuantity::Compare(*sum, q("1e30")) == 1);
  std::optional<KubeQuantity> back = KubeQuantity::Sub(*sum, q("1e30"));
  REQUIRE(back);
  CHECK(back->big == nullptr);  // small again
  CHECK(KubeQuantity::Compare(*back, q("1n")) == 0);
  CHECK(KubeQuantity::Compare(q("0.00000000000000000000000000000000000000000001"), q("1n")) == 0);
  CHECK(KubeQuantity::Compare(q("1.0000000000000000000000000000000000000001Gi"), q("1073741824.000000001")) == 0);
  CHECK(KubeQuantity::Compare(q("123456789012345678901234567890123456789012345Ki"), q("9223372036854775807")) == 0);
  CHECK_FALSE(long45.AsInt64());
}

TEST_CASE("Semantic versions order as blang/semver", "[cel]") {
  auto v = [](const char* text) { return *SemanticVersion::Parse(text); };
  CHECK(SemanticVersion::Compare(v("1.0.0-alpha"), v("1.0.0-alpha.1")) == -1);
  CHECK(SemanticVersion::Compare(v("1.0.0-alpha.1"), v("1.0.0-alpha.beta")) == -1);
  CHECK(SemanticVersion::Compare(v("1.0.0-rc.1"), v("1.0.0")) == -1);
  CHECK(SemanticVersion::Compare(v("1.0.0+a"), v("1.0.0+b")) == 0);
  CHECK_FALSE(SemanticVersion::Parse("1.2.3-01"));
  CHECK_FALSE(SemanticVersion::Parse("v1.2.3"));
  CHECK(SemanticVersion::Parse("v1.2.3", /*normalize=*/true).has_value());
}

}  // namespace cel_test
