// tessel-bench: replays snapshots and traces through Tessel's scheduling core.
//   tessel-bench replay --snapshot FILE [--config FILE] [--out FILE] [--table]
#include <iostream>
#include <string_view>

#include "bench/replay/replay.h"

namespace {

void Usage() {
  std::cerr << "usage: tessel-bench <command> [flags]\n"
               "commands:\n"
               "  replay   schedule the pending pods of a cluster snapshot (kubectl get -o json)\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage();
    return 2;
  }
  std::string_view command = argv[1];
  if (command == "replay") return tessel::bench::ReplayMain(argc - 2, argv + 2);
  if (command == "--help" || command == "-h" || command == "help") {
    Usage();
    return 0;
  }
  std::cerr << "tessel-bench: unknown command \"" << command << "\"\n";
  Usage();
  return 2;
}
