// Tessel: FGD with Tessel's defaults (see tessel_gpu.h).
#include "plugins/tessel_gpu/tessel_gpu.h"

namespace tessel::tessel_gpu {

absl::StatusOr<std::unique_ptr<fgd::FGD>> Tessel::New(const YAML::Node& args, Handle& handle) {
  return fgd::FGD::NewWithDefaults(
      args, handle, fgd::Options{.name = kName, .sigmoid_scale_milli = 0, .preserve_idle_nodes = true,
                                .pack_whole_gpus_when_learning = true});
}

}  // namespace tessel::tessel_gpu
