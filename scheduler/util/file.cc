#include "scheduler/util/file.h"

#include <fstream>
#include <sstream>

#include "scheduler/util/strings.h"

namespace tessel {

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat("cannot read ", path));
  std::stringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return absl::DataLossError(StrCat("error reading ", path));
  return buf.str();
}

}  // namespace tessel
