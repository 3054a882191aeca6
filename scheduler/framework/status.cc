// Status names and messages.
#include "scheduler/framework/status.h"

#include "scheduler/util/strings.h"

namespace tessel {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kSuccess:
      return "Success";
    case Code::kError:
      return "Error";
    case Code::kUnschedulable:
      return "Unschedulable";
    case Code::kUnschedulableAndUnresolvable:
      return "UnschedulableAndUnresolvable";
    case Code::kWait:
      return "Wait";
    case Code::kSkip:
      return "Skip";
  }
  return "Unknown";
}

std::string Status::Message() const {
  if (reasons_.empty()) return std::string(CodeName(code_));
  return StrCat(CodeName(code_), ": ", StrJoin(reasons_, "; "));
}

}  // namespace tessel
