// The syntax of CEL selector expressions: the lexer and the recursive-descent parser that build
// the expression tree (with cel-go's macros already expanded: has(), all, exists, exists_one,
// map, filter, cel.bind). Errors name the line and column ("1:12: ...").
//
//   absl::StatusOr<std::unique_ptr<Expr>> tree = Parse("device.driver == 'gpu.example.com'");
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/dra/cel/values.h"

namespace tessel::dra::cel {

struct Expr {
  enum class Kind : uint8_t {
    kLiteral,        // literal
    kIdent,          // name
    kSelect,         // args[0].name
    kPresence,       // has(args[0].name)
    kIndex,          // args[0][args[1]]
    kCall,           // name(args...) or, when member, args[0].name(args[1...])
    kList,           // [args...]
    kAnd,            // args[0] && args[1]
    kOr,             // args[0] || args[1]
    kConditional,    // args[0] ? args[1] : args[2]
    kComprehension,  // a list macro over args[0]; see Macro
    kBind,           // cel.bind(name, args[0], args[1])
  };
  enum class Macro : uint8_t { kNone, kAll, kExists, kExistsOne, kMap, kMapFilter, kFilter };

  Kind kind;
  int position = 0;  // byte offset in the expression
  Value literal;
  std::string name;
  bool member = false;
  Macro macro = Macro::kNone;  // kComprehension: args = {range, predicate or transform[, transform]}
  std::vector<std::unique_ptr<Expr>> args;

  // Filled by the checker: the local-variable slot of an identifier or a bound name, and the
  // function a call resolved to.
  int slot = -1;
  int function = -1;
  int overload = -1;  // the one overload the static types chose, or -1
  // A literal that Tessel computed from a call on constants where cel-go would not have: not a
  // constant for the rules that copy cel-go's planner (failing conversions, set membership).
  bool folded = false;
  // `x in [constants]`: cel-go's planner turns it into a hash-set lookup, which fails on a value
  // that Go cannot hash (a Semver, a list) instead of answering false.
  bool set_membership = false;
};

absl::StatusOr<std::unique_ptr<Expr>> Parse(std::string_view expression);

// "line:column" (1-based, columns in code points) of a byte offset, for messages.
std::string Position(std::string_view expression, int offset);

}  // namespace tessel::dra::cel
