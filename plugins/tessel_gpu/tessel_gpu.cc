// Tessel: FGD with Tessel's defaults (see tessel_gpu.h).
#include "plugins/tessel_gpu/tessel_gpu.h"

#include "scheduler/util/status_macros.h"

namespace tessel::tessel_gpu {

absl::StatusOr<TesselArgs> Tessel::ParseArgs(const YAML::Node& yaml) {
  TesselArgs args;
  ASSIGN_OR_RETURN(static_cast<fgd::FGDArgs&>(args), fgd::ParseFGDArgs(kName, yaml, args));
  return args;
}

absl::StatusOr<std::unique_ptr<fgd::FGD>> Tessel::New(Args args, Handle& handle) {
  return std::make_unique<fgd::FGD>(kName, args, &handle);
}

}  // namespace tessel::tessel_gpu
