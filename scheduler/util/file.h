// Reading a whole file, with an error that names the path.
//
//   ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace tessel {

// NotFound when the file cannot be opened, DataLoss when reading fails part way.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace tessel
