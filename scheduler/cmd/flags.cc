#include "scheduler/cmd/flags.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iostream>

#include "scheduler/cmd/version.h"
#include "scheduler/util/strings.h"

namespace tessel::cmd {
namespace {

// Help starts in this column; a longer flag puts its help on the next line.
constexpr size_t kHelpColumn = 29;

std::string Quoted(std::string_view value) { return StrCat("\"", value, "\""); }

std::string RangeText(IntRange range) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (range.min == kMin && range.max == kMax) return "";
  if (range.max == kMax) return StrCat(" >= ", range.min);
  if (range.min == kMin) return StrCat(" <= ", range.max);
  return StrCat(" in ", range.min, "..", range.max);
}

std::optional<bool> ParseBool(std::string_view v) {
  if (v == "true") return true;
  if (v == "false") return false;
  return std::nullopt;
}

bool IsHelp(std::string_view arg) { return arg == "-h" || arg == "--help"; }

}  // namespace

FlagSet::FlagSet(std::string program, std::string head, std::string tail)
    : program_(std::move(program)), head_(std::move(head)), tail_(std::move(tail)) {}

FlagSet& FlagSet::Add(Flag flag) {
  flags_.push_back(std::move(flag));
  return *this;
}

FlagSet& FlagSet::String(Names names, std::string value_name, std::string* target, std::string help) {
  return Add({.names = std::move(names.all),
              .value_name = std::move(value_name),
              .help = std::move(help),
              .set = [target](std::string_view v) {
                *target = std::string(v);
                return absl::OkStatus();
              }});
}

FlagSet& FlagSet::Choice(Names names, std::vector<std::string> choices, std::string* target,
                         std::string help) {
  std::string value_name = StrJoin(choices, "|");
  return Add({.names = std::move(names.all),
              .value_name = std::move(value_name),
              .help = std::move(help),
              .set = [target, choices = std::move(choices)](std::string_view v) {
                for (const std::string& c : choices) {
                  if (c == v) {
                    *target = c;
                    return absl::OkStatus();
                  }
                }
                return absl::InvalidArgumentError(
                    StrCat(Quoted(v), " is not one of ", StrJoin(choices, ", ")));
              }});
}

FlagSet& FlagSet::List(Names names, std::string value_name, std::vector<std::string>* target,
                       std::string help, std::vector<std::string> choices) {
  return Add({.names = std::move(names.all),
              .value_name = std::move(value_name),
              .help = std::move(help),
              .set =
                  [target, choices = std::move(choices)](std::string_view v) {
                    for (std::string_view rest = v;;) {
                      const size_t comma = rest.find(',');
                      const std::string item(rest.substr(0, comma));
                      if (item.empty()) {
                        return absl::InvalidArgumentError(StrCat(Quoted(v), " has an empty item"));
                      }
                      if (!choices.empty() &&
                          std::find(choices.begin(), choices.end(), item) == choices.end()) {
                        return absl::InvalidArgumentError(
                            StrCat(Quoted(item), " is not one of ", StrJoin(choices, ", ")));
                      }
                      target->push_back(item);
                      if (comma == std::string_view::npos) break;
                      rest = rest.substr(comma + 1);
                    }
                    return absl::OkStatus();
                  },
              .reset = [target] { target->clear(); }});
}

FlagSet& FlagSet::Bool(Names names, bool* target, std::string help) {
  return Add({.names = std::move(names.all),
              .value_name = "",
              .help = std::move(help),
              .set = [target](std::string_view v) {
                std::optional<bool> b = ParseBool(v);
                if (!b) return absl::InvalidArgumentError(StrCat(Quoted(v), " is not true or false"));
                *target = *b;
                return absl::OkStatus();
              }});
}

FlagSet& FlagSet::AddInt(Names names, std::string value_name, IntRange range, IntRange fits,
                         std::string help, std::function<void(int64_t)> store) {
  return Add({.names = std::move(names.all),
              .value_name = std::move(value_name),
              .help = std::move(help),
              .set = [range, fits, store = std::move(store)](std::string_view v) {
                int64_t n = 0;
                const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
                if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < fits.min ||
                    n > fits.max) {
                  return absl::InvalidArgumentError(
                      StrCat(Quoted(v), " is not an integer", RangeText(range)));
                }
                store(n);
                return absl::OkStatus();
              }});
}

namespace {

absl::StatusOr<double> ParseNumber(std::string_view v, Sign sign) {
  const std::string s(v);
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  const bool in_range = sign == Sign::kPositive ? d > 0 : d >= 0;  // false for NaN
  if (s.empty() || *end != '\0' || !in_range || d == std::numeric_limits<double>::infinity()) {
    return absl::InvalidArgumentError(
        StrCat(Quoted(v), sign == Sign::kPositive ? " is not a positive number" : " is not a number >= 0"));
  }
  return d;
}

// Parses a number into `target` (a double, or an optional one).
template <typename Target>
std::function<absl::Status(std::string_view)> SetNumber(Target* target, Sign sign) {
  return [target, sign](std::string_view v) -> absl::Status {
    absl::StatusOr<double> d = ParseNumber(v, sign);
    if (!d.ok()) return d.status();
    *target = *d;
    return absl::OkStatus();
  };
}

}  // namespace

FlagSet& FlagSet::Double(Names names, std::string value_name, double* target, Sign sign, std::string help) {
  return Add({.names = std::move(names.all), .value_name = std::move(value_name), .help = std::move(help),
              .set = SetNumber(target, sign)});
}

FlagSet& FlagSet::Double(Names names, std::string value_name, std::optional<double>* target, Sign sign,
                         std::string help) {
  return Add({.names = std::move(names.all), .value_name = std::move(value_name), .help = std::move(help),
              .set = SetNumber(target, sign)});
}

FlagSet& FlagSet::Duration(Names names, std::string value_name, absl::Duration* target, std::string help) {
  return Add({.names = std::move(names.all),
              .value_name = std::move(value_name),
              .help = std::move(help),
              .set = [target](std::string_view v) {
                absl::Duration d;
                if (!absl::ParseDuration(std::string(v), &d) || d <= absl::ZeroDuration()) {
                  return absl::InvalidArgumentError(StrCat(Quoted(v), " is not a positive duration like 15s"));
                }
                *target = d;
                return absl::OkStatus();
              }});
}

FlagSet& FlagSet::Positional(std::vector<std::string>* target) {
  positional_ = target;
  return *this;
}

const FlagSet::Flag* FlagSet::Find(std::string_view name) const {
  for (const Flag& f : flags_) {
    if (std::find(f.names.begin(), f.names.end(), name) != f.names.end()) return &f;
  }
  return nullptr;
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args) {
  bool flags_ended = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool is_flag = !flags_ended && arg.size() > 1 && arg[0] == '-';
    if (!is_flag) {
      if (!flags_ended && arg == "--") {
        flags_ended = true;
        continue;
      }
      if (positional_ == nullptr) return absl::InvalidArgumentError(StrCat("unexpected argument ", Quoted(arg)));
      positional_->push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_ended = true;
      continue;
    }
    if (IsHelp(arg)) {
      help_ = true;
      return absl::OkStatus();
    }
    std::string name = arg;
    std::optional<std::string> value;
    if (const size_t eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    const Flag* flag = Find(name);
    if (flag == nullptr && !value && arg[1] != '-' && arg.size() > 2) {
      // A short flag with its value attached: -v4.
      const Flag* short_flag = Find(arg.substr(0, 2));
      if (short_flag != nullptr && !short_flag->value_name.empty()) {
        flag = short_flag;
        name = arg.substr(0, 2);
        value = arg.substr(2);
      }
    }
    if (flag == nullptr) return absl::InvalidArgumentError(StrCat("unknown flag ", name));
    if (flag->value_name.empty() && !value) {
      // A bool: bare is true; a following true or false is its value.
      value = "true";
      if (i + 1 < args.size() && ParseBool(args[i + 1])) value = args[++i];
    }
    if (!value) {
      if (i + 1 >= args.size()) return absl::InvalidArgumentError(StrCat(name, " needs a value"));
      value = args[++i];
    }
    const bool first = given_.insert(flag->names.front()).second;
    if (first && flag->reset) flag->reset();
    if (absl::Status st = flag->set(*value); !st.ok()) {
      return absl::InvalidArgumentError(StrCat(name, ": ", st.message()));
    }
  }
  return absl::OkStatus();
}

bool FlagSet::Given(std::string_view name) const {
  const Flag* flag = Find(name);
  return flag != nullptr && given_.contains(flag->names.front());
}

std::string FlagSet::Usage() const {
  std::string out = head_;
  if (!out.empty() && out.back() != '\n') out += '\n';
  if (!out.empty()) out += '\n';
  auto line = [&out](std::string left, std::string_view help) {
    left = StrCat("  ", left);
    if (!help.empty()) {
      left += left.size() + 2 <= kHelpColumn ? std::string(kHelpColumn - left.size(), ' ')
                                             : StrCat("\n", std::string(kHelpColumn, ' '));
    }
    out += left;
    for (std::string_view rest = help;;) {
      const size_t nl = rest.find('\n');
      out += rest.substr(0, nl);
      out += '\n';
      if (nl == std::string_view::npos) break;
      rest = rest.substr(nl + 1);
      out += std::string(kHelpColumn, ' ');
    }
  };
  for (const Flag& f : flags_) {
    std::string left = StrJoin(f.names, ", ");
    if (!f.value_name.empty()) StrAppend(&left, " ", f.value_name);
    line(std::move(left), f.help);
  }
  line("-h, --help", "print this usage and exit");
  if (!tail_.empty()) {
    out += '\n';
    out += tail_;
    if (out.back() != '\n') out += '\n';
  }
  return out;
}

void ParseOrExit(FlagSet& flags, int argc, char** argv) {
  if (absl::Status st = flags.Parse(argc, argv); !st.ok()) {
    std::cerr << flags.program() << ": " << st.message() << "\n\n" << flags.Usage();
    std::exit(2);
  }
  if (flags.help()) {
    std::cout << flags.Usage();
    std::exit(0);
  }
}

int RunCommand(std::string_view program, std::string_view head, const std::vector<Command>& commands,
               int argc, char** argv) {
  auto usage = [&] {
    std::string out = StrCat(head, "commands:\n");
    size_t width = 0;
    for (const Command& c : commands) width = std::max(width, c.name.size());
    for (const Command& c : commands) {
      StrAppend(&out, "  ", c.name, std::string(width + 2 - c.name.size(), ' '), c.summary, "\n");
    }
    return out;
  };
  if (argc < 1) {
    std::cerr << usage();
    return 2;
  }
  const std::string_view name = argv[0];
  if (IsHelp(name) || name == "help") {
    std::cout << usage();
    return 0;
  }
  if (name == "--version" || name == "version") {
    std::cout << program << " " << Version() << "\n";
    return 0;
  }
  for (const Command& c : commands) {
    if (c.name == name) return c.run(argc - 1, argv + 1);
  }
  std::cerr << program << ": unknown command " << Quoted(name) << "\n" << usage();
  return 2;
}

}  // namespace tessel::cmd
