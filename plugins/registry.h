// Every in-tree plugin, by name. Adding a plugin = one folder under plugins/ plus one line in
// registry.cc (and, if it should run by default, a line in defaults.cc).
#pragma once

#include "scheduler/framework/config.h"
#include "scheduler/framework/registry.h"

namespace tessel {

Registry InTreeRegistry();

// The default profile ("tessel"): the plugins every profile starts from (see defaults.cc).
const ProfileConfig& DefaultProfile();
// The YAML the default profile is parsed from (printed by `tessel-scheduler --print-defaults`).
std::string_view DefaultConfigYaml();

}  // namespace tessel
