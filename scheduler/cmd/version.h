// The release this binary was built as: the VERSION file at the repository root, which CMake
// reads into the project version (one place; tests/release/version_test.sh checks the others).
// Every binary prints it for --version (tessel-bench through cmd::RunCommand).
//
//   std::cout << "tesselctl " << cmd::Version() << "\n";
#pragma once

#include <string_view>

namespace tessel::cmd {

std::string_view Version();

}  // namespace tessel::cmd
