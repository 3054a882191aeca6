// libFuzzer target: the kubeconfig reader (scheduler/kube/kubeconfig.h) on arbitrary YAML text,
// with its current context and with a context named by the input's first line. Relative file
// references resolve against a folder that does not exist, so no file is ever read; the reader
// must answer with a config or an error, never throw. A config it accepts names a server.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "scheduler/kube/kubeconfig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kNoFolder = "/nonexistent/tessel-fuzz";
  for (std::string_view context : {std::string_view(), text.substr(0, text.find('\n'))}) {
    const auto config = tessel::kube::ParseKubeconfig(text, kNoFolder, context);
    if (config.ok() && config->server.empty()) std::abort();
  }
  return 0;
}
