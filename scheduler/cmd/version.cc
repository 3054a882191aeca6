#include "scheduler/cmd/version.h"

namespace tessel::cmd {

std::string_view Version() { return TESSEL_VERSION; }

}  // namespace tessel::cmd
