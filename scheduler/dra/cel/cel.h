// CEL device selectors of Dynamic Resource Allocation (DeviceClass.spec.selectors[].cel and a
// claim request's selectors), compiled once and evaluated exactly, with the results of the
// reference implementation (cel-go with Kubernetes' DRA environment). An expression outside the
// supported subset is a compile error that says what is not supported; it never evaluates to
// true or false. Errors carry no object name: the caller adds the class or claim and the field.
//
//   absl::StatusOr<Selector> s = Selector::Compile("device.driver == \"gpu.example.com\"");
//   absl::StatusOr<bool> match = s->Matches(view);  // an error when the expression fails at run time
//
// A Selector is immutable once compiled: copies share the program, and Matches() may run on many
// threads at once. docs/gpu.md ("DRA device selectors: the CEL subset") lists what is supported.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/dra/device_view.h"

namespace tessel::dra::cel {

struct Program;  // the compiled expression (cel.cc)

class Selector {
 public:
  // InvalidArgument naming the position and what is wrong or unsupported.
  static absl::StatusOr<Selector> Compile(std::string_view expression);

  // True or false as the reference would give; an error where the reference fails at run time
  // (a missing attribute, a type mismatch, an overflow).
  absl::StatusOr<bool> Matches(const DeviceView& device) const;

  const std::string& expression() const { return expression_; }

 private:
  std::string expression_;
  std::shared_ptr<const Program> program_;
};

}  // namespace tessel::dra::cel
