// tessel-cel-eval: Tessel's side of the CEL differential test (differential.py). Reads the same
// JSON lines as the reference (reference/main.go) and prints the same outcome lines: true,
// false, error or compile_error, a tab, and the detail.
//
//   echo '{"expr":"device.driver == \"d\"","device":{"driver":"d"}}' | tessel_cel_eval
#include <iostream>
#include <map>
#include <string>

#include "nlohmann/json.hpp"
#include "scheduler/dra/cel/cel.h"

namespace {

using tessel::dra::AttributeValue;
using tessel::dra::DomainMap;

// "domain/name" or a bare name in the driver's domain, as a ResourceSlice publishes it.
std::pair<std::string, std::string> Qualify(const std::string& name, const std::string& driver) {
  size_t slash = name.find('/');
  if (slash == std::string::npos) return {driver, name};
  return {name.substr(0, slash), name.substr(slash + 1)};
}

std::string OneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  return s;
}

}  // namespace

int main() {
  std::map<std::string, absl::StatusOr<tessel::dra::cel::Selector>> compiled;
  std::string line;
  while (std::getline(std::cin, line)) {
    nlohmann::json c = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (c.is_discarded() || !c.contains("expr")) {
      std::cerr << "tessel_cel_eval: bad input line\n";
      return 2;
    }
    std::string expr = c["expr"].get<std::string>();
    auto it = compiled.find(expr);
    if (it == compiled.end()) it = compiled.emplace(expr, tessel::dra::cel::Selector::Compile(expr)).first;
    if (!it->second.ok()) {
      std::cout << "compile_error\t" << OneLine(std::string(it->second.status().message())) << "\n";
      continue;
    }
    static const nlohmann::json kEmpty = nlohmann::json::object();
    const nlohmann::json& d = c.contains("device") ? c["device"] : kEmpty;
    const nlohmann::json& attrs = d.contains("attributes") ? d["attributes"] : kEmpty;
    const nlohmann::json& caps = d.contains("capacity") ? d["capacity"] : kEmpty;
    std::string driver = d.value("driver", "");
    DomainMap<AttributeValue> attributes;
    DomainMap<std::string> capacity;
    for (const auto& [name, a] : attrs.items()) {
      auto [domain, id] = Qualify(name, driver);
      AttributeValue v;
      if (a.contains("int")) v = a["int"].get<int64_t>();
      if (a.contains("bool")) v = a["bool"].get<bool>();
      if (a.contains("string")) v = a["string"].get<std::string>();
      if (a.contains("version")) v = tessel::dra::SemVer{a["version"].get<std::string>()};
      attributes[domain][id] = v;
    }
    for (const auto& [name, q] : caps.items()) {
      auto [domain, id] = Qualify(name, driver);
      capacity[domain][id] = q.get<std::string>();
    }
    tessel::dra::DeviceView view{.driver = driver, .attributes = &attributes, .capacity = &capacity,
                                 .allow_multiple_allocations = d.value("allowMultipleAllocations", false)};
    absl::StatusOr<bool> match = it->second->Matches(view);
    if (!match.ok()) {
      std::cout << "error\t" << OneLine(std::string(match.status().message())) << "\n";
    } else {
      std::cout << (*match ? "true" : "false") << "\t\n";
    }
  }
  return 0;
}
