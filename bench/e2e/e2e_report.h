// What `tessel-bench e2e` prints: the runs side by side as a table, or as JSON (--json).
#pragma once

#include <cstdint>
#include <vector>

#include "bench/e2e/e2e_run.h"
#include "nlohmann/json.hpp"

namespace tessel::bench::e2e {

nlohmann::json ToJson(const RunResult& r);
void PrintTable(const Options& o, int64_t gpus_asked, int64_t placeable, const std::vector<RunResult>& runs);

}  // namespace tessel::bench::e2e
