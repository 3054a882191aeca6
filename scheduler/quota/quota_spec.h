// The quota part of a Queue's and a Cohort's spec: one shape, one decoder, so that a team's
// queue and a department's cohort state their quotas the same way (Kueue's ClusterQueue and
// Cohort share it too).
//
//   spec.nominalQuota / borrowingLimit / lendingLimit   flat quotas by resource name, or
//   spec.resourceGroups                                  the same per flavor (flavor.h keys)
//   spec.weight                                          fair sharing among siblings
//
//   QuotaSpec q;
//   DecodeQuotaSpec(decoder, spec, {.kind = "Queue", .parent_field = "spec.cohort", .has_parent = true}, q);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json_fwd.hpp"
#include "scheduler/api/objects.h"

namespace tessel {

class FieldDecoder;

// Per-resource limits. A resource that is not listed has no limit.
using ResourceLimits = std::map<std::string, int64_t, std::less<>>;

// One entry of spec.resourceGroups: resources whose quota is divided into the same flavors.
// The quota amounts themselves are in QuotaSpec::nominal (and the limits) under flavored keys.
struct ResourceGroup {
  std::vector<std::string> covered;  // coveredResources
  std::vector<std::string> flavors;  // in the order pods try them

  // Whether `charge` (plain resource names: requests, or QuotaCharge) asks a resource the group
  // covers.
  bool UsedBy(const Resources& charge) const;
  // The part of `charge` the group covers, under `flavor`'s keys ("nvidia.com/gpu@spot").
  Resources InFlavor(const Resources& charge, std::string_view flavor) const;
};

// At most this many resource groups, and flavors per group (Kueue's limits are 16 and 16).
inline constexpr size_t kMaxResourceGroups = 4;
inline constexpr size_t kMaxFlavorsPerGroup = 16;

struct QuotaSpec {
  // spec.nominalQuota; with spec.resourceGroups, every flavor's quotas under flavored keys
  // ("nvidia.com/gpu@reserved", flavor.h), and likewise in the limits below.
  Resources nominal;
  // Every resource spec.nominalQuota lists, zeros included ("nvidia.com/gpu: 0" is a quota of
  // none, not no quota; Resources drops zeros).
  std::vector<std::string> listed;
  // spec.resourceGroups: empty for flat quotas.
  std::vector<ResourceGroup> resource_groups;
  ResourceLimits borrowing_limit;  // how far above nominal it may borrow from its parent
  ResourceLimits lending_limit;    // how much of its nominal it lends; unlisted: all of it
  int64_t weight_milli = 1000;     // spec.weight, fair sharing among its siblings

  bool flavored() const { return !resource_groups.empty(); }
};

struct QuotaSpecContext {
  std::string_view kind;  // "Queue" or "Cohort", for messages
  // The field that names the parent ("spec.cohort" for a Queue, "spec.parent" for a Cohort),
  // for the message when limits are set without one.
  std::string_view parent_field;
  bool has_parent = false;
  // A Queue lends at most its own nominal quota; a Cohort may lend from its whole subtree.
  bool lending_within_nominal = true;
};

// Decodes the quota fields of `spec` into `out`, recording errors that name the field:
// negative amounts, a lending limit above nominal, limits without a parent, a non-positive
// weight, flat quotas beside spec.resourceGroups, malformed groups.
void DecodeQuotaSpec(FieldDecoder& d, const nlohmann::json& spec, const QuotaSpecContext& context,
                     QuotaSpec& out);

}  // namespace tessel
