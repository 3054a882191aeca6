// The functions and operators of the DRA CEL environment that Tessel supports: their static
// overloads (for the checker) and their run-time behaviour (for the evaluator), with the
// semantics of cel-go's standard library, its string extensions, and Kubernetes' quantity and
// semver libraries. Everything else is a compile error that names it.
//
//   int fn = FindFunction("startsWith", /*member=*/true);   // -1 when not supported
//   Value v = CallFunction(fn, {Value{std::string("nvidia-a100")}, Value{std::string("nvidia")}});
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/dra/cel/values.h"

namespace re2 {
class RE2;
}

namespace tessel::dra::cel {

// A static CEL type. kParam is the overload type parameter ("A", "B": params[0] unused).
struct Type {
  enum class Kind : uint8_t {
    kDyn, kNull, kBool, kInt, kUint, kDouble, kString, kList, kMap, kQuantity, kSemver, kDevice, kParam,
  };
  Kind kind = Kind::kDyn;
  std::vector<Type> params;  // list: element; map: key, value
  char param_name = 0;       // kParam: 'A' or 'B'

  static Type Of(Kind k) { return Type{k, {}, 0}; }
  static Type List(Type elem) { return Type{Kind::kList, {std::move(elem)}, 0}; }
  static Type Map(Type key, Type value) { return Type{Kind::kMap, {std::move(key), std::move(value)}, 0}; }
  bool is(Kind k) const { return kind == k; }
  std::string Name() const;
  friend bool operator==(const Type& a, const Type& b);
};

struct Overload {
  std::vector<Type> params;  // a member function's receiver first
  Type result;
};

// The index of a supported function, or -1. `member` is the receiver-call form (x.f()).
int FindFunction(std::string_view name, bool member);
const std::vector<Overload>& FunctionOverloads(int function);
// Names that upstream's environment declares and Tessel does not evaluate (for the message).
bool IsKnownUnsupported(std::string_view name);

// What the checker learnt about one call: the pattern of a matches() call compiled at compile
// time (null: compile it now), and the one overload the static types chose (-1: several fit, and
// at run time the first that the values fit is taken, as cel-go's dispatcher does).
struct CallSite {
  const re2::RE2* regex = nullptr;
  int overload = -1;
};

// Calls a function with arguments that are not errors.
Value CallFunction(int function, std::span<const Value> args, const CallSite& site = {});

// types.Equal (heterogeneous equality; a bool, or an error for Quantity/Semver against others).
Value Equal(const Value& a, const Value& b);

// The value of `target.name` (a map key or a device field).
Value SelectField(const Value& target, std::string_view name);
// has(target.name).
Value HasField(const Value& target, std::string_view name);
// target[index].
Value Index(const Value& target, const Value& index);
// `value in container`.
Value Contains(const Value& container, const Value& value);

// The elements a comprehension iterates (list items or map keys), or an error.
Value IterationRange(const Value& range);

// Is `pattern` a valid regular expression (as matches() reads it)? Empty when it is.
std::string RegexError(std::string_view pattern);

}  // namespace tessel::dra::cel
