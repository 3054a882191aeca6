// Command-line flags for every binary (tessel-scheduler, tesselctl, tessel-bench and each of its
// commands). A command declares its flags (names, typed target, help), Parse fills the targets
// from argv, and Usage prints the declarations: one parser, so every binary reads its command
// line the same way and reports a bad one the same way.
//
//   cmd::FlagSet flags("tessel-bench replay", "usage: tessel-bench replay --snapshot FILE [flags]");
//   flags.String("--snapshot", "FILE", &o.snapshot_path, "the cluster snapshot (kubectl get -o json)");
//   flags.Int("--threads", "N", &o.threads, {1, 256}, "worker threads (default 2)");
//   flags.Bool("--table", &table, "print a placement table instead of JSON");
//   cmd::ParseOrExit(flags, argc, argv);   // --help: usage to stdout, exit 0; bad flags: exit 2
//
// What the parser accepts:
//   --flag value and --flag=value (a short flag also -v4);
//   a bool bare (true), as --flag=true|false, or followed by the word true or false;
//   a list as comma-separated values; its first occurrence replaces the default, later ones add;
//   -h and --help; "--" ends the flags;
//   positional arguments only where the command declares them (Positional).
// Every error names the flag and the value: `--bind-workers: "0" is not an integer in 1..256`.
//
// Why not absl flags (Debian's abseil has them): they are process-wide globals defined at
// namespace scope, so the seven tessel-bench commands would all share one flag namespace and
// --help would list every command's flags; a command here owns its FlagSet and its targets.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tessel::cmd {

// A flag's spellings: the first is its name (in usage and Given); the others are aliases.
struct Names {
  Names(const char* name) : all{name} {}
  Names(std::string name) : all{std::move(name)} {}
  Names(std::initializer_list<std::string> names) : all(names) {}
  std::vector<std::string> all;
};

// An integer flag's accepted values, both ends included.
struct IntRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};

// What a number flag accepts below: zero and up, or only above zero.
enum class Sign { kNonNegative, kPositive };

class FlagSet {
 public:
  // `program` prefixes errors ("tessel-bench trace: ..."); `head` is the usage's opening text
  // (the usage line and anything to say before the flags), `tail` what follows them.
  explicit FlagSet(std::string program, std::string head = "", std::string tail = "");

  FlagSet& String(Names names, std::string value_name, std::string* target, std::string help);
  // One of `choices`.
  FlagSet& Choice(Names names, std::vector<std::string> choices, std::string* target, std::string help);
  // Comma-separated values, each one of `choices` when choices are given.
  FlagSet& List(Names names, std::string value_name, std::vector<std::string>* target, std::string help,
                std::vector<std::string> choices = {});
  FlagSet& Bool(Names names, bool* target, std::string help);
  // A whole number within `range` (and the target type's), into any integer (or optional
  // integer) target.
  template <typename T>
  FlagSet& Int(Names names, std::string value_name, T* target, IntRange range, std::string help) {
    using U = Underlying<T>;
    static_assert(std::is_integral_v<U>);
    IntRange fits = range;
    if (fits.min < static_cast<int64_t>(std::numeric_limits<U>::min())) fits.min = std::numeric_limits<U>::min();
    if (fits.max >= 0 && static_cast<uint64_t>(fits.max) > static_cast<uint64_t>(std::numeric_limits<U>::max())) {
      fits.max = static_cast<int64_t>(std::numeric_limits<U>::max());
    }
    return AddInt(std::move(names), std::move(value_name), range, fits, std::move(help),
                  [target](int64_t v) { *target = static_cast<U>(v); });
  }
  FlagSet& Double(Names names, std::string value_name, double* target, Sign sign, std::string help);
  FlagSet& Double(Names names, std::string value_name, std::optional<double>* target, Sign sign,
                  std::string help);
  // A positive duration like 15s, 500ms or 1m30s.
  FlagSet& Duration(Names names, std::string value_name, absl::Duration* target, std::string help);
  // Arguments that are not flags (tesselctl's command and its arguments), shown in usage as
  // `value_name`; without this, one is an error.
  FlagSet& Positional(std::vector<std::string>* target);

  // Fills the targets from args (argv without the program name). Stops at the first error,
  // which names the flag and the value.
  absl::Status Parse(const std::vector<std::string>& args);
  absl::Status Parse(int argc, char** argv) { return Parse(std::vector<std::string>(argv, argv + argc)); }

  // -h or --help was among the arguments (Parse then fills nothing further and returns ok).
  bool help() const { return help_; }
  // Whether the flag (by any of its names; answered by its first) was on the command line.
  bool Given(std::string_view name) const;
  const std::string& program() const { return program_; }
  // The head, every flag with its help, and the tail.
  std::string Usage() const;

 private:
  template <typename T>
  struct UnderlyingOf {
    using type = T;
  };
  template <typename T>
  struct UnderlyingOf<std::optional<T>> {
    using type = T;
  };
  template <typename T>
  using Underlying = typename UnderlyingOf<T>::type;

  struct Flag {
    std::vector<std::string> names;
    std::string value_name;  // empty: a bool
    std::string help;
    // Parses and stores a value; the error says what is wrong with it (Parse adds the flag).
    std::function<absl::Status(std::string_view value)> set;
    std::function<void()> reset = nullptr;  // a list's: empties the default before the first value

  };
  FlagSet& Add(Flag flag);
  // `range` as declared (for errors), `fits` also within the target's type.
  FlagSet& AddInt(Names names, std::string value_name, IntRange range, IntRange fits, std::string help,
                  std::function<void(int64_t)> store);
  const Flag* Find(std::string_view name) const;

  std::string program_, head_, tail_;
  std::vector<Flag> flags_;
  std::vector<std::string>* positional_ = nullptr;
  std::set<std::string, std::less<>> given_;  // first names
  bool help_ = false;
};

// Parses argv (without the program name) or exits: with --help the usage goes to stdout and the
// process exits 0; on an error, "<program>: <error>", a blank line and the usage go to stderr
// and it exits 2.
void ParseOrExit(FlagSet& flags, int argc, char** argv);

// A binary made of commands (tessel-bench replay|trace|...): the command is the first argument,
// the rest is its own.
struct Command {
  std::string name;
  std::string summary;  // one line of usage
  std::function<int(int argc, char** argv)> run;
};
// Runs the command argv[0] names with the arguments after it; with no command, an unknown one
// or help, prints the usage made of `head` and the commands' summaries (exit 2, 2 or 0);
// --version (or version) prints `program` and cmd::Version() (exit 0).
int RunCommand(std::string_view program, std::string_view head, const std::vector<Command>& commands,
               int argc, char** argv);

}  // namespace tessel::cmd
