// The flags library (scheduler/cmd/flags.h): typed values in both forms, bools, lists, ranges,
// unknown flags and missing values, positional arguments, Given, and the usage text printed from
// the declarations.
#include <catch2/catch.hpp>

#include "scheduler/cmd/flags.h"

namespace tessel::cmd {
namespace flags_test {

struct Options {
  std::string config;
  int port = 10259;
  int64_t burst = 100;
  std::optional<int64_t> limit;
  double qps = 50;
  std::optional<double> rate;
  bool json = false;
  bool leader_elect = true;
  absl::Duration lease = absl::Seconds(15);
  std::string output = "table";
  std::vector<std::string> policies = {"bestfit", "fgd"};
  std::vector<std::string> compare;
  int verbosity = 2;
};

struct Fixture {
  Options o;
  FlagSet flags{"tool", "usage: tool [flags]", "See docs/tool.md."};
  Fixture() {
    flags.String({"--config", "-c"}, "FILE", &o.config, "configuration file")
        .Int("--port", "N", &o.port, {0, 65535}, "HTTP port (default 10259;\n0: off)")
        .Int("--burst", "N", &o.burst, {.min = 1}, "client burst")
        .Int("--limit", "N", &o.limit, {}, "a limit")
        .Double("--qps", "Q", &o.qps, Sign::kNonNegative, "client QPS")
        .Double("--rate", "R", &o.rate, Sign::kPositive, "a rate")
        .Bool("--json", &o.json, "print JSON")
        .Bool("--leader-elect", &o.leader_elect, "run leader election")
        .Duration("--lease-duration", "D", &o.lease, "the lease")
        .Choice("-o", {"table", "json", "yaml"}, &o.output, "output format")
        .List({"--policy", "--policies"}, "P[,P...]", &o.policies, "policies")
        .List("--compare", "WHAT", &o.compare, "to compare with", {"kube-scheduler", "ceiling"})
        .Int({"-v", "--v"}, "N", &o.verbosity, {0, 10}, "log verbosity");
  }
  absl::Status Parse(std::vector<std::string> args) { return flags.Parse(args); }
};

TEST_CASE("flags: values in the --flag value and --flag=value forms fill typed targets") {
  Fixture f;
  REQUIRE(f.Parse({"--config", "a.yaml", "--port=8080", "--burst", "7", "--limit=-3", "--qps", "0",
                   "--rate=2.5", "--lease-duration", "1m30s", "-o", "yaml"})
              .ok());
  CHECK(f.o.config == "a.yaml");
  CHECK(f.o.port == 8080);
  CHECK(f.o.burst == 7);
  CHECK(f.o.limit == -3);
  CHECK(f.o.qps == 0);
  CHECK(f.o.rate == 2.5);
  CHECK(f.o.lease == absl::Seconds(90));
  CHECK(f.o.output == "yaml");
  CHECK(f.flags.Given("--port"));
  CHECK_FALSE(f.flags.Given("--json"));
  CHECK_FALSE(f.flags.help());
}

TEST_CASE("flags: defaults stay where no flag is given") {
  Fixture f;
  REQUIRE(f.Parse({}).ok());
  CHECK(f.o.port == 10259);
  CHECK_FALSE(f.o.limit.has_value());
  CHECK_FALSE(f.o.rate.has_value());
  CHECK(f.o.policies == std::vector<std::string>{"bestfit", "fgd"});
}

TEST_CASE("flags: aliases fill the same target and count as the flag's first name") {
  Fixture f;
  REQUIRE(f.Parse({"-c", "b.yaml", "--v", "5"}).ok());
  CHECK(f.o.config == "b.yaml");
  CHECK(f.o.verbosity == 5);
  CHECK(f.flags.Given("--config"));
  CHECK(f.flags.Given("-c"));
}

TEST_CASE("flags: a short flag takes its value attached") {
  Fixture f;
  REQUIRE(f.Parse({"-v4"}).ok());
  CHECK(f.o.verbosity == 4);
  Fixture g;
  REQUIRE(g.Parse({"-v=6"}).ok());
  CHECK(g.o.verbosity == 6);
}

TEST_CASE("flags: bools are bare, =true|false, or followed by true or false") {
  Fixture f;
  REQUIRE(f.Parse({"--json"}).ok());
  CHECK(f.o.json);

  Fixture off;
  REQUIRE(off.Parse({"--leader-elect=false"}).ok());
  CHECK_FALSE(off.o.leader_elect);

  Fixture next;
  REQUIRE(next.Parse({"--leader-elect", "false", "--json", "true"}).ok());
  CHECK_FALSE(next.o.leader_elect);
  CHECK(next.o.json);

  Fixture bad;
  absl::Status st = bad.Parse({"--json=yes"});
  CHECK(st.code() == absl::StatusCode::kInvalidArgument);
  CHECK(st.message() == "--json: \"yes\" is not true or false");
}

TEST_CASE("flags: a list's first occurrence replaces the default, later ones add") {
  Fixture f;
  REQUIRE(f.Parse({"--policy", "random,tessel", "--policies=fgd", "--compare", "ceiling"}).ok());
  CHECK(f.o.policies == std::vector<std::string>{"random", "tessel", "fgd"});
  CHECK(f.o.compare == std::vector<std::string>{"ceiling"});

  Fixture bad;
  CHECK(bad.Parse({"--compare", "ceiling,kube"}).message() ==
        "--compare: \"kube\" is not one of kube-scheduler, ceiling");
  Fixture empty;
  CHECK(empty.Parse({"--policy", "a,,b"}).message() == "--policy: \"a,,b\" has an empty item");
}

TEST_CASE("flags: errors name the flag and the value") {
  auto error = [](std::vector<std::string> args) {
    Fixture f;
    absl::Status st = f.Parse(std::move(args));
    CHECK(st.code() == absl::StatusCode::kInvalidArgument);
    return std::string(st.message());
  };
  CHECK(error({"--nope", "1"}) == "unknown flag --nope");
  CHECK(error({"--nope=1"}) == "unknown flag --nope");
  CHECK(error({"-x"}) == "unknown flag -x");
  CHECK(error({"--port", "http"}) == "--port: \"http\" is not an integer in 0..65535");
  CHECK(error({"--port=70000"}) == "--port: \"70000\" is not an integer in 0..65535");
  CHECK(error({"--port", "80x"}) == "--port: \"80x\" is not an integer in 0..65535");
  CHECK(error({"--port", ""}) == "--port: \"\" is not an integer in 0..65535");
  CHECK(error({"--burst", "0"}) == "--burst: \"0\" is not an integer >= 1");
  CHECK(error({"--limit", "1.5"}) == "--limit: \"1.5\" is not an integer");
  CHECK(error({"--qps", "-1"}) == "--qps: \"-1\" is not a number >= 0");
  CHECK(error({"--rate", "0"}) == "--rate: \"0\" is not a positive number");
  CHECK(error({"--rate", "nan"}) == "--rate: \"nan\" is not a positive number");
  CHECK(error({"--lease-duration", "15"}) == "--lease-duration: \"15\" is not a positive duration like 15s");
  CHECK(error({"--lease-duration", "-1s"}) == "--lease-duration: \"-1s\" is not a positive duration like 15s");
  CHECK(error({"-o", "xml"}) == "-o: \"xml\" is not one of table, json, yaml");
  CHECK(error({"--config"}) == "--config needs a value");
  CHECK(error({"--json", "--port"}) == "--port needs a value");
  CHECK(error({"extra"}) == "unexpected argument \"extra\"");
}

TEST_CASE("flags: a value may start with a dash; -- ends the flags") {
  Fixture f;
  std::vector<std::string> rest;
  f.flags.Positional(&rest);
  REQUIRE(f.Parse({"--config", "-weird", "cmd", "--json", "--", "--port", "x"}).ok());
  CHECK(f.o.config == "-weird");
  CHECK(f.o.json);
  CHECK(rest == std::vector<std::string>{"cmd", "--port", "x"});
}

TEST_CASE("flags: positional arguments mix with flags where the command takes them") {
  Fixture f;
  std::vector<std::string> args;
  f.flags.Positional(&args);
  REQUIRE(f.Parse({"pending", "-o", "json", "ns/pod"}).ok());
  CHECK(args == std::vector<std::string>{"pending", "ns/pod"});
  CHECK(f.o.output == "json");
}

TEST_CASE("flags: -h and --help ask for the usage") {
  for (const char* help : {"-h", "--help"}) {
    Fixture f;
    REQUIRE(f.Parse({"--json", help, "--nope"}).ok());
    CHECK(f.flags.help());
  }
}

TEST_CASE("flags: usage is printed from the declarations") {
  FlagSet flags("tool", "usage: tool [flags]", "See docs/tool.md.");
  std::string config;
  int port = 0;
  bool json = false;
  std::string output;
  absl::Duration lease;
  flags.String({"--config", "-c"}, "FILE", &config, "configuration file")
      .Int("--port", "N", &port, {0, 65535}, "HTTP port (default 0;\n0: off)")
      .Bool("--json", &json, "print JSON")
      .Choice("-o", {"table", "json"}, &output, "output format")
      .Duration("--leader-elect-lease-duration", "D", &lease, "(default 15s)");
  CHECK(flags.Usage() ==
        "usage: tool [flags]\n"
        "\n"
        "  --config, -c FILE          configuration file\n"
        "  --port N                   HTTP port (default 0;\n"
        "                             0: off)\n"
        "  --json                     print JSON\n"
        "  -o table|json              output format\n"
        "  --leader-elect-lease-duration D\n"
        "                             (default 15s)\n"
        "  -h, --help                 print this usage and exit\n"
        "\n"
        "See docs/tool.md.\n");
}

TEST_CASE("flags: RunCommand runs the named command with the arguments after it") {
  std::vector<std::string> seen;
  const std::vector<Command> commands = {
      {"replay", "replay a snapshot",
       [&](int argc, char** argv) {
         seen.assign(argv, argv + argc);
         return 7;
       }},
      {"gang", "time gang decisions", [](int, char**) { return 0; }}};
  std::string a0 = "replay", a1 = "--snapshot", a2 = "s.json";
  char* argv[] = {a0.data(), a1.data(), a2.data()};
  CHECK(RunCommand("bench", "usage: bench <command> [flags]\n", commands, 3, argv) == 7);
  CHECK(seen == std::vector<std::string>{"--snapshot", "s.json"});

  std::string unknown = "nope";
  char* bad[] = {unknown.data()};
  CHECK(RunCommand("bench", "", commands, 1, bad) == 2);
  CHECK(RunCommand("bench", "", commands, 0, nullptr) == 2);
  std::string help = "--help";
  char* h[] = {help.data()};
  CHECK(RunCommand("bench", "", commands, 1, h) == 0);
}

}  // namespace flags_test
}  // namespace tessel::cmd
