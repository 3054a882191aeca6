// Replay scenarios: every tests/replay/NAME.json snapshot is scheduled and compared with
// NAME.expected.json (placements exactly; reasons exactly for the pods listed; each expected
// warning found; the evicted pods exactly, in order (none when not listed); the metrics listed
// under "metrics" exactly; the "claims" bound (selected node, PV) exactly when listed; an optional
// "config" names a scheduler configuration beside it). Also runs
// the tessel-bench binary for its exit codes and output file.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "nlohmann/json.hpp"
#include "bench/replay/replay.h"
#include "plugins/registry.h"

namespace tessel::bench {
namespace replay_test {

namespace fs = std::filesystem;
using nlohmann::json;

json ReadJson(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream buf;
  buf << in.rdbuf();
  return json::parse(buf.str());
}

std::vector<fs::path> Scenarios() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(TESSEL_REPLAY_DIR)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".json") && !name.ends_with(".expected.json")) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("replay scenarios match their expected placements", "[replay]") {
  const std::vector<fs::path> scenarios = Scenarios();
  REQUIRE(scenarios.size() >= 5);
  for (const fs::path& snapshot : scenarios) {
    fs::path expected_path = snapshot;
    expected_path.replace_extension(".expected.json");
    SECTION(snapshot.filename().string()) {
      REQUIRE(fs::exists(expected_path));
      const json expected = ReadJson(expected_path);
      // A scenario may need a plugin another part of the project provides (e.g. reclaim needs
      // the preemption plugin): it runs once that plugin is in the registry.
      if (expected.contains("requires_plugin") &&
          InTreeRegistry().Find(expected["requires_plugin"].get<std::string>()) == nullptr) {
        WARN(snapshot.filename().string() << " skipped: needs plugin "
                                          << expected["requires_plugin"].get<std::string>());
        return;
      }
      ReplayOptions options{.snapshot_path = snapshot.string()};
      if (expected.contains("config")) {
        options.config_path = (snapshot.parent_path() / expected["config"].get<std::string>()).string();
      }
      auto result = RunReplay(options);
      REQUIRE(result.ok());
      CHECK((*result)["placements"] == expected["placements"]);
      const json reasons = expected.value("reasons", json::object());
      for (const auto& [pod, reason] : reasons.items()) {
        CAPTURE(pod);
        CHECK((*result)["reasons"].value(pod, "") == reason.get<std::string>());
      }
      const json& warnings = (*result)["warnings"];
      if (expected.contains("warnings")) {
        CHECK(warnings.size() == expected["warnings"].size());
        for (const auto& want : expected["warnings"]) {
          bool found = false;
          for (const auto& w : warnings) found |= w.get<std::string>().find(want.get<std::string>()) != std::string::npos;
          CAPTURE(want, warnings.dump(1));
          CHECK(found);
        }
      } else {
        CHECK(warnings.empty());
      }
      // Claims bound for placed pods (selected node, PV), exactly, when the scenario lists them.
      if (expected.contains("claims")) CHECK((*result).value("claims", json::object()) == expected["claims"]);
      // Evictions (preemption, gang rollback) are listed in the order they happened.
      CHECK((*result)["evicted"] == expected.value("evicted", json::array()));
      if (expected.contains("metrics")) {
        for (const auto& [name, value] : expected["metrics"].items()) {
          CAPTURE(name);
          CHECK((*result)["metrics"][name] == value);
        }
      }
      // Every pending pod is accounted for, placed or explained.
      const json& m = (*result)["metrics"];
      CHECK(m["pods_scheduled"].get<int64_t>() + m["pods_unschedulable"].get<int64_t>() ==
            static_cast<int64_t>(expected["placements"].size()));
    }
  }
}

struct Run {
  int status;
  std::string output;
};

Run RunBench(const std::string& args) {
  const std::string out_file = fs::temp_directory_path() / ("tessel-replay-" + std::to_string(::getpid()) + ".out");
  const std::string cmd = std::string(TESSEL_BENCH_BIN) + " " + args + " >" + out_file + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream in(out_file);
  std::stringstream buf;
  buf << in.rdbuf();
  fs::remove(out_file);
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, buf.str()};
}

TEST_CASE("tessel-bench replay exit codes and output", "[replay][binary]") {
  const fs::path dir = fs::temp_directory_path() / ("tessel-replay-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "not-json.json") << "{ this is not json";
  std::ofstream(dir / "not-list.json") << R"({"kind": "Pod", "metadata": {"name": "x"}})";

  SECTION("an unreadable file exits non-zero with one line") {
    for (std::string name : {"missing.json", "not-json.json", "not-list.json"}) {
      Run r = RunBench("replay --snapshot " + (dir / name).string());
      CAPTURE(name, r.output);
      CHECK(r.status != 0);
      CHECK(r.output.find(name) != std::string::npos);
      CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    }
  }
  SECTION("bad objects still exit 0 and the JSON lands in --out") {
    const fs::path out = dir / "result.json";
    Run r = RunBench("replay --snapshot " + std::string(TESSEL_REPLAY_DIR) + "/bad_input.json --out " + out.string());
    CHECK(r.status == 0);
    json result = ReadJson(out);
    CHECK(result["placements"]["default/good"] == "n1");
    for (const char* key : {"placements", "reasons", "evicted", "warnings", "metrics"}) CHECK(result.contains(key));
  }
  SECTION("usage errors") {
    CHECK(RunBench("replay").status == 2);
    CHECK(RunBench("replay --snapshot").status == 2);
    CHECK(RunBench("replay --frobnicate x").status == 2);
    CHECK(RunBench("unknown-command").status == 2);
  }
  fs::remove_all(dir);
}

}  // namespace replay_test
}  // namespace tessel::bench
