// Decoding the quota fields a Queue and a Cohort share (see quota_spec.h).
#include "scheduler/quota/quota_spec.h"

#include <algorithm>
#include <optional>
#include <set>

#include "nlohmann/json.hpp"
#include "scheduler/api/decode.h"
#include "scheduler/api/quantity.h"
#include "scheduler/quota/flavor.h"
#include "scheduler/util/strings.h"

namespace tessel {

bool ResourceGroup::UsedBy(const Resources& charge) const {
  return std::any_of(covered.begin(), covered.end(), [&](const std::string& r) { return charge.Get(r) > 0; });
}

Resources ResourceGroup::InFlavor(const Resources& charge, std::string_view flavor) const {
  Resources out;
  for (const std::string& r : covered) {
    if (const int64_t amount = charge.Get(r); amount > 0) out.Set(FlavoredResource(r, flavor), amount);
  }
  return out;
}
namespace {

using nlohmann::json;

ResourceLimits LimitsField(FieldDecoder& d, const json& spec, std::string_view key,
                           std::string_view path) {
  ResourceLimits out;
  Resources amounts = d.ResourceMap(spec, key, path);
  const json* listed = d.Object(spec, key, path);
  if (listed == nullptr) return out;
  // Listed with 0 is a limit of 0; Resources drops zeros, so read the names from the JSON.
  for (const auto& [name, v] : listed->items()) out[name] = amounts.Get(name);
  return out;
}

// spec.resourceGroups: the groups' flavors in order, each flavor's quotas put into the spec's
// maps under flavored keys (flavor.h), with every rule of the flat maps checked per key.
void DecodeResourceGroups(FieldDecoder& d, const json& spec, const QuotaSpecContext& context, QuotaSpec& q) {
  const json* groups = d.Array(spec, "resourceGroups", "spec.resourceGroups");
  if (groups == nullptr) return;
  if (groups->size() > kMaxResourceGroups) {
    d.Fail("spec.resourceGroups", StrCat("at most ", kMaxResourceGroups, " groups"));
    return;
  }
  std::set<std::string, std::less<>> covered_anywhere;
  std::set<std::string, std::less<>> flavors_anywhere;
  for (size_t g = 0; g < groups->size(); ++g) {
    const std::string gp = d.ItemPath("spec.resourceGroups", g);
    ResourceGroup group;
    d.ForEach((*groups)[g], "coveredResources", StrCat(gp, ".coveredResources"),
              [&](const json& item, const std::string& path) {
                std::optional<std::string> r = d.NameItem(item, path, "a resource name");
                if (!r) return;
                if (!covered_anywhere.insert(*r).second) d.Fail(path, StrCat(*r, " is covered twice"));
                group.covered.push_back(*std::move(r));
              });
    if (group.covered.empty()) d.Fail(StrCat(gp, ".coveredResources"), "must list at least one resource");
    const json* flavors = d.Array((*groups)[g], "flavors", StrCat(gp, ".flavors"));
    if (flavors == nullptr || flavors->empty()) {
      d.Fail(StrCat(gp, ".flavors"), "must list at least one flavor");
      continue;
    }
    if (flavors->size() > kMaxFlavorsPerGroup) {
      d.Fail(StrCat(gp, ".flavors"), StrCat("at most ", kMaxFlavorsPerGroup, " flavors"));
      continue;
    }
    for (size_t f = 0; f < flavors->size(); ++f) {
      const std::string fp = d.ItemPath(StrCat(gp, ".flavors"), f);
      const json& flavor = (*flavors)[f];
      const std::string name = d.String(flavor, "name", StrCat(fp, ".name"));
      if (name.empty()) {
        d.Fail(StrCat(fp, ".name"), "missing");
        continue;
      }
      if (!flavors_anywhere.insert(name).second) {
        d.Fail(StrCat(fp, ".name"), StrCat("flavor ", name, " is listed twice"));
      }
      group.flavors.push_back(name);
      std::set<std::string, std::less<>> seen;
      d.ForEach(flavor, "resources", StrCat(fp, ".resources"), [&](const json& item, const std::string& rp) {
        const std::string r = d.String(item, "name", StrCat(rp, ".name"));
        if (std::find(group.covered.begin(), group.covered.end(), r) == group.covered.end()) {
          d.Fail(StrCat(rp, ".name"), StrCat("\"", r, "\" is not one of the group's coveredResources"));
          return;
        }
        if (!seen.insert(r).second) d.Fail(StrCat(rp, ".name"), StrCat(r, " is listed twice"));
        const std::string key = FlavoredResource(r, name);
        auto amount = [&](std::string_view field) -> std::optional<int64_t> {
          const std::string path = StrCat(rp, ".", field);
          if (!item.contains(field) || item[field].is_null()) return std::nullopt;
          const json& v = item[field];
          std::string text = v.is_string() ? v.get<std::string>() : v.is_number_integer() ? v.dump() : "";
          absl::StatusOr<int64_t> parsed = ParseResourceQuantity(r, text);
          if (text.empty() || !parsed.ok()) {
            d.Fail(path, text.empty() ? "expected a quantity" : std::string(parsed.status().message()));
            return std::nullopt;
          }
          if (*parsed < 0) {
            d.Fail(path, "must not be negative");
            return std::nullopt;
          }
          return *parsed;
        };
        const std::optional<int64_t> nominal = amount("nominalQuota");
        if (!nominal.has_value() && !item.contains("nominalQuota")) d.Fail(StrCat(rp, ".nominalQuota"), "missing");
        q.nominal.Set(key, nominal.value_or(0));
        q.listed.push_back(key);
        if (const std::optional<int64_t> b = amount("borrowingLimit")) {
          if (!context.has_parent) d.Fail(StrCat(rp, ".borrowingLimit"), StrCat("is only meaningful with ", context.parent_field));
          q.borrowing_limit[key] = *b;
        }
        if (const std::optional<int64_t> l = amount("lendingLimit")) {
          if (context.lending_within_nominal && *l > nominal.value_or(0)) {
            d.Fail(StrCat(rp, ".lendingLimit"),
                   StrCat("lends ", FormatResourceQuantity(r, *l), " but the nominal quota is ",
                          FormatResourceQuantity(r, nominal.value_or(0))));
          }
          q.lending_limit[key] = *l;
        }
      });
      for (const std::string& r : group.covered) {
        if (!seen.contains(r)) d.Fail(StrCat(fp, ".resources"), StrCat("lacks ", r, " of the group's coveredResources"));
      }
    }
    q.resource_groups.push_back(std::move(group));
  }
}

void DecodeWeight(FieldDecoder& d, const json& spec, QuotaSpec& q) {
  if (!spec.contains("weight") || spec["weight"].is_null()) return;
  const json& w = spec["weight"];
  absl::StatusOr<int64_t> milli = absl::InvalidArgumentError("expected a number");
  if (w.is_string()) milli = ParseMilli(w.get<std::string>());
  if (w.is_number_integer()) milli = ParseMilli(std::to_string(w.get<int64_t>()));
  if (!milli.ok()) {
    d.Fail("spec.weight", std::string(milli.status().message()));
  } else if (*milli <= 0) {
    d.Fail("spec.weight", "must be positive");
  } else {
    q.weight_milli = *milli;
  }
}

}  // namespace

void DecodeQuotaSpec(FieldDecoder& d, const json& spec, const QuotaSpecContext& context, QuotaSpec& q) {
  q.nominal = d.ResourceMap(spec, "nominalQuota", "spec.nominalQuota");
  if (const json* listed = d.Object(spec, "nominalQuota", "spec.nominalQuota")) {
    for (const auto& [name, v] : listed->items()) q.listed.push_back(name);
  }
  q.borrowing_limit = LimitsField(d, spec, "borrowingLimit", "spec.borrowingLimit");
  q.lending_limit = LimitsField(d, spec, "lendingLimit", "spec.lendingLimit");
  for (const auto& [name, limit] : q.lending_limit) {
    if (context.lending_within_nominal && limit > q.nominal.Get(name)) {
      d.Fail(StrCat("spec.lendingLimit.", name),
             StrCat("lends ", FormatResourceQuantity(name, limit), " but the nominal quota is ",
                    FormatResourceQuantity(name, q.nominal.Get(name))));
    }
  }
  if (!context.has_parent && !q.borrowing_limit.empty()) {
    d.Fail("spec.borrowingLimit", StrCat("is only meaningful with ", context.parent_field));
  }
  if (spec.contains("resourceGroups") && !spec["resourceGroups"].is_null()) {
    for (std::string_view flat : {"nominalQuota", "borrowingLimit", "lendingLimit"}) {
      if (spec.contains(flat) && !spec[flat].is_null()) {
        d.Fail(StrCat("spec.", flat), StrCat("a ", context.kind, " has either flat quotas or spec.resourceGroups, not both"));
      }
    }
    DecodeResourceGroups(d, spec, context, q);
  }
  DecodeWeight(d, spec, q);
}

}  // namespace tessel
