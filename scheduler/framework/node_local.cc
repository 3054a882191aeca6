// Canonical, unambiguous encodings of pod fields for cache keys (see node_local.h): every string
// is length-prefixed and every list counted, so different values never encode alike.
#include "scheduler/framework/node_local.h"

#include <charconv>

namespace tessel {
void AppendKeyInt(int64_t v, std::string& key) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  key.append(buf, end);
  key.push_back(';');
}

void AppendKeyString(std::string_view s, std::string& key) {
  AppendKeyInt(static_cast<int64_t>(s.size()), key);
  key.append(s);
}

void AppendGpuRequest(const gpu::GpuRequest& r, std::string& key) {
  for (int64_t v : {static_cast<int64_t>(r.kind), int64_t{r.count}, r.milli, static_cast<int64_t>(r.sharing),
                    r.memory_bytes, r.mig_sevenths}) {
    AppendKeyInt(v, key);
  }
}

namespace {

void AppendTerm(const NodeSelectorTerm& term, std::string& key) {
  for (const auto* list : {&term.match_expressions, &term.match_fields}) {
    AppendKeyInt(static_cast<int64_t>(list->size()), key);
    for (const NodeSelectorRequirement& r : *list) {
      AppendKeyString(r.key, key);
      AppendKeyInt(static_cast<int64_t>(r.op), key);
      AppendKeyInt(static_cast<int64_t>(r.values.size()), key);
      for (const std::string& v : r.values) AppendKeyString(v, key);
    }
  }
}

}  // namespace

void AppendResources(const Resources& r, std::string& key) {
  key.push_back('R');
  AppendKeyInt(r.milli_cpu, key);
  AppendKeyInt(r.memory, key);
  AppendKeyInt(r.ephemeral_storage, key);
  AppendKeyInt(r.pods, key);
  AppendKeyInt(static_cast<int64_t>(r.scalar.size()), key);
  for (const auto& [name, amount] : r.scalar) {
    AppendKeyString(name, key);
    AppendKeyInt(amount, key);
  }
}

void AppendTolerations(const std::vector<Toleration>& tolerations, std::string& key) {
  key.push_back('T');
  AppendKeyInt(static_cast<int64_t>(tolerations.size()), key);
  for (const Toleration& t : tolerations) {
    AppendKeyString(t.key, key);
    AppendKeyInt(static_cast<int64_t>(t.op), key);
    AppendKeyString(t.value, key);
    AppendKeyInt(t.effect.has_value() ? static_cast<int64_t>(*t.effect) : -1, key);
    AppendKeyInt(t.toleration_seconds.value_or(-1), key);
    AppendKeyInt(t.toleration_seconds.has_value(), key);
  }
}

void AppendNodeSelection(const Pod& pod, std::string& key) {
  key.push_back('S');
  AppendKeyInt(static_cast<int64_t>(pod.node_selector.size()), key);
  for (const auto& [k, v] : pod.node_selector) {
    AppendKeyString(k, key);
    AppendKeyString(v, key);
  }
  const NodeAffinity& a = pod.node_affinity;
  AppendKeyInt(a.required.has_value() ? static_cast<int64_t>(a.required->size()) : -1, key);
  if (a.required.has_value()) {
    for (const NodeSelectorTerm& term : *a.required) AppendTerm(term, key);
  }
  AppendKeyInt(static_cast<int64_t>(a.preferred.size()), key);
  for (const PreferredSchedulingTerm& p : a.preferred) {
    AppendKeyInt(p.weight, key);
    AppendTerm(p.preference, key);
  }
}

}  // namespace tessel
