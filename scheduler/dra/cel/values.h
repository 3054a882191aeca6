// The run-time values of the CEL selector evaluator and the two Kubernetes value types it knows:
// a resource quantity as k8s.io/apimachinery keeps it (exact, with the int64-or-decimal
// representation that decides isInteger()) and a semantic version as blang/semver parses it.
//
//   std::optional<KubeQuantity> q = KubeQuantity::Parse("1.5Gi");
//   int c = KubeQuantity::Compare(*q, *KubeQuantity::Parse("1536Mi"));  // 0
//   std::optional<SemanticVersion> v = SemanticVersion::Parse("1.2.3-rc.1");
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "scheduler/dra/device_view.h"

namespace tessel::dra::cel {

// CEL's int is int64: its ends, where arithmetic overflows.
inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// The magnitude of a quantity too long for 128 bits: base-10^9 limbs, least significant first.
using BigMagnitude = std::vector<uint32_t>;

// A Kubernetes resource.Quantity: unscaled * 10^exponent, exact at any length. `decimal` says the
// quantity left apimachinery's int64 fast path (inf.Dec): such a quantity is never "an integer"
// to AsInt64, and neither is an int64 one with a negative exponent ("1000m"), as upstream.
// Values of up to 38 digits live in `unscaled`; longer ones (only decimal ones can be) keep their
// magnitude in `big`, and `unscaled` then holds only their sign (-1 or 1).
struct KubeQuantity {
  __int128 unscaled = 0;
  int32_t exponent = 0;
  bool decimal = false;
  // The result of add() or sub(): upstream returns it as a pointer, which Quantity's equality
  // does not accept as its right-hand side (quantity("1") == quantity("1").add(0) is an error).
  bool boxed = false;
  std::shared_ptr<const BigMagnitude> big;

  // resource.ParseQuantity: nullopt when the text is not a quantity.
  static std::optional<KubeQuantity> Parse(std::string_view text);
  static KubeQuantity FromInt(int64_t v) { return {v, 0, false}; }

  // -1, 0, 1 exactly.
  static int Compare(const KubeQuantity& a, const KubeQuantity& b);
  int Sign() const { return unscaled < 0 ? -1 : unscaled > 0 ? 1 : 0; }
  // Quantity.Add / Sub; nullopt only when the operands' exponents lie so far apart (more than
  // 100,000 decimal places) that the exact result is not worth building.
  static std::optional<KubeQuantity> Add(const KubeQuantity& a, const KubeQuantity& b);
  static std::optional<KubeQuantity> Sub(const KubeQuantity& a, const KubeQuantity& b);
  // Quantity.AsInt64.
  std::optional<int64_t> AsInt64() const;
};

// A blang/semver Version.
struct SemanticVersion {
  uint64_t major = 0, minor = 0, patch = 0;
  struct PreRelease {
    std::string text;
    std::optional<uint64_t> number;  // set when the part is numeric
  };
  std::vector<PreRelease> pre;

  // semver.Parse (strict); with `normalize`, the Kubernetes library's normalizeAndParse first
  // (a leading "v", missing minor or patch, leading zeros).
  static std::optional<SemanticVersion> Parse(std::string_view text, bool normalize = false);
  // semver.Version.Compare (build metadata is ignored).
  static int Compare(const SemanticVersion& a, const SemanticVersion& b);
};

struct Value;
using ValueList = std::vector<Value>;

// A map that the device exposes: device.attributes, device.attributes[domain], and the same for
// capacity. A missing domain reads as an empty map, as the reference's map with a default does.
struct DeviceMap {
  enum class Kind : uint8_t { kAttributeDomains, kAttributes, kCapacityDomains, kCapacities };
  Kind kind;
  const void* map = nullptr;  // the DomainMap or inner map; null is an empty map
};

struct NullValue {
  friend bool operator==(NullValue, NullValue) { return true; }
};
struct DeviceRef {
  const DeviceView* device;
};
struct ErrorValue {
  std::string message;
};

struct Value {
  std::variant<NullValue, bool, int64_t, uint64_t, double, std::string,
               std::shared_ptr<const ValueList>, DeviceMap, KubeQuantity,
               std::shared_ptr<const SemanticVersion>, DeviceRef, ErrorValue>
      v;

  bool is_error() const { return std::holds_alternative<ErrorValue>(v); }
  template <typename T>
  const T* get() const { return std::get_if<T>(&v); }
  // The CEL type name, for messages ("int", "string", "list", "map", "Quantity", ...).
  std::string_view TypeName() const;
};

inline Value Error(std::string message) { return Value{ErrorValue{std::move(message)}}; }
Value NoSuchOverload(std::string_view function);

// The attribute value as CEL sees it (a version attribute becomes a Semver value).
Value AttributeToValue(const AttributeValue& attribute);

// UTF-8 helpers: CEL indexes strings by code point.
std::u32string DecodeUtf8(std::string_view s);
std::string EncodeUtf8(std::u32string_view s);
int64_t CodePointCount(std::string_view s);

// Go's strconv.FormatFloat(d, 'g', -1, 64), as string(double) prints.
std::string FormatDouble(double d);

}  // namespace tessel::dra::cel
