// Building a profile's plugin lists and running them at each extension point.
#include "scheduler/framework/framework.h"

#include <algorithm>

#include "scheduler/util/strings.h"

namespace tessel {
namespace {

template <typename T>
bool Contains(const std::vector<T*>& list, const T* p) {
  return std::find(list.begin(), list.end(), p) != list.end();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Framework>> Framework::New(const Registry& registry,
                                                          const ProfileConfig& profile,
                                                          Handle& handle,
                                                          FrameworkOptions options) {
  std::unique_ptr<Framework> fw(new Framework(handle, options));
  fw->scheduler_name_ = profile.scheduler_name;
  const std::string where = StrCat("profile \"", profile.scheduler_name, "\"");

  // A disabled name must be a plugin too: a typo there would silently leave a default enabled.
  for (const auto& [point, set] : profile.plugins) {
    for (size_t i = 0; i < set.disabled.size(); ++i) {
      const std::string& name = set.disabled[i];
      if (name != "*" && registry.Find(name) == nullptr) {
        return absl::InvalidArgumentError(StrCat(where, ": plugins.", point, ".disabled[", i,
                                                 "]: unknown plugin \"", name, "\""));
      }
    }
  }

  // Instantiate every plugin named anywhere, once.
  StringKeyedMap<Plugin*> by_name;
  for (const auto& [point, set] : profile.plugins) {
    for (const PluginRef& ref : set.enabled) {
      if (by_name.contains(ref.name)) continue;
      const PluginFactory* factory = registry.Find(ref.name);
      if (factory == nullptr) {
        return absl::InvalidArgumentError(StrCat(where, ": plugins.", point,
                                                       ": unknown plugin \"", ref.name, "\""));
      }
      auto args = profile.plugin_args.find(ref.name);
      auto made = (*factory)(args == profile.plugin_args.end() ? YAML::Node() : args->second, handle);
      if (!made.ok()) {
        return absl::InvalidArgumentError(StrCat(where, ": pluginConfig \"", ref.name,
                                                       "\": ", made.status().message()));
      }
      by_name[ref.name] = made->get();
      fw->owned_.push_back(*std::move(made));
    }
  }
  for (const auto& [name, args] : profile.plugin_args) {
    if (!by_name.contains(name)) {
      return absl::InvalidArgumentError(
          StrCat(where, ": pluginConfig names \"", name, "\", which no extension point enables"));
    }
  }

  // Adds `plugin` at `point`; `strict` fails when it does not implement the point.
  auto add = [&](std::string_view point, Plugin* plugin, int64_t weight,
                 bool strict) -> absl::Status {
    auto put = [&](auto* typed, auto& list) {
      if (typed == nullptr) return false;
      if (!Contains(list, typed)) list.push_back(typed);
      return true;
    };
    bool ok = true;
    if (point == "queueSort") {
      auto* qs = dynamic_cast<QueueSortPlugin*>(plugin);
      ok = qs != nullptr;
      if (ok && fw->queue_sort_ != nullptr && fw->queue_sort_ != qs) {
        return absl::InvalidArgumentError(StrCat(where, ": only one queueSort plugin may be enabled"));
      }
      if (ok) fw->queue_sort_ = qs;
    } else if (point == "preFilter") {
      ok = put(dynamic_cast<PreFilterPlugin*>(plugin), fw->pre_filter_);
    } else if (point == "filter") {
      ok = put(dynamic_cast<FilterPlugin*>(plugin), fw->filter_);
    } else if (point == "postFilter") {
      ok = put(dynamic_cast<PostFilterPlugin*>(plugin), fw->post_filter_);
      if (auto* gang = dynamic_cast<GangPostFilterPlugin*>(plugin); ok && gang != nullptr) {
        put(gang, fw->gang_post_filter_);
      }
    } else if (point == "preScore") {
      ok = put(dynamic_cast<PreScorePlugin*>(plugin), fw->pre_score_);
    } else if (point == "score") {
      auto* sp = dynamic_cast<ScorePlugin*>(plugin);
      ok = sp != nullptr;
      bool present = std::any_of(fw->score_.begin(), fw->score_.end(),
                                 [&](const WeightedScore& w) { return w.plugin == sp; });
      if (ok && !present) fw->score_.push_back({sp, weight});
    } else if (point == "reserve") {
      ok = put(dynamic_cast<ReservePlugin*>(plugin), fw->reserve_);
    } else if (point == "permit") {
      ok = put(dynamic_cast<PermitPlugin*>(plugin), fw->permit_);
    } else if (point == "preBind") {
      ok = put(dynamic_cast<PreBindPlugin*>(plugin), fw->pre_bind_);
    } else if (point == "bind") {
      ok = put(dynamic_cast<BindPlugin*>(plugin), fw->bind_);
    }
    if (!ok && strict) {
      return absl::InvalidArgumentError(StrCat(where, ": plugin \"", plugin->Name(),
                                                     "\" does not implement ", point));
    }
    return absl::OkStatus();
  };

  for (std::string_view point : kExtensionPoints) {
    auto set = profile.plugins.find(point);
    if (set == profile.plugins.end()) continue;
    for (const PluginRef& ref : set->second.enabled) {
      if (absl::Status st = add(point, by_name[ref.name], ref.weight, true); !st.ok()) return st;
    }
  }
  if (auto multi = profile.plugins.find("multiPoint"); multi != profile.plugins.end()) {
    for (const PluginRef& ref : multi->second.enabled) {
      for (std::string_view point : kExtensionPoints) {
        auto set = profile.plugins.find(point);
        bool disabled = false;
        if (set != profile.plugins.end()) {
          for (const std::string& d : set->second.disabled) disabled |= d == "*" || d == ref.name;
        }
        if (disabled) continue;
        if (absl::Status st = add(point, by_name[ref.name], ref.weight, false); !st.ok()) return st;
      }
    }
  }
  for (const auto& p : fw->owned_) {
    if (auto* pa = dynamic_cast<PreAssumePlugin*>(p.get())) fw->pre_assume_.push_back(pa);
    // Like PreAssume, a victim policy needs no extension point of its own: being in the
    // profile is enough.
    if (auto* vp = dynamic_cast<VictimPolicyPlugin*>(p.get())) fw->victim_policies_.push_back(vp);
    if (auto* po = dynamic_cast<PendingOrderPlugin*>(p.get()); po != nullptr && fw->pending_order_ == nullptr) {
      fw->pending_order_ = po;
    }
    if (auto* tk = dynamic_cast<TimekeeperPlugin*>(p.get())) fw->timekeepers_.push_back(tk);
  }
  if (fw->queue_sort_ == nullptr) {
    return absl::InvalidArgumentError(StrCat(where, ": no queueSort plugin is enabled"));
  }
  if (fw->bind_.empty()) {
    return absl::InvalidArgumentError(StrCat(where, ": no bind plugin is enabled"));
  }
  if (!fw->reference_) fw->BuildDecisionCache();
  return fw;
}

void Framework::BuildDecisionCache() {
  DecisionCache::Profile p;
  for (const FilterPlugin* f : filter_) p.filters.push_back({f, dynamic_cast<const NodeLocalPlugin*>(f)});
  for (const WeightedScore& ws : score_) {
    p.scores.push_back({ws.plugin, ws.weight, dynamic_cast<const NodeLocalPlugin*>(ws.plugin)});
  }
  for (PreScorePlugin* ps : pre_score_) {
    const bool scores = std::any_of(score_.begin(), score_.end(), [&](const WeightedScore& ws) {
      return dynamic_cast<Plugin*>(ws.plugin) == dynamic_cast<Plugin*>(ps);
    });
    if (!scores) p.pre_scores.push_back({ps, dynamic_cast<const NodeLocalPlugin*>(ps)});
  }
  p.run_pre_score = [this](CycleState& state, const Pod& pod, const std::vector<const NodeInfo*>& feasible) {
    return RunPreScore(state, pod, feasible);
  };
  p.run_score = [this](const CycleState& state, const Pod& pod, const std::vector<const NodeInfo*>& feasible) {
    return RunScore(state, pod, feasible);
  };
  decision_cache_ = std::make_unique<DecisionCache>(std::move(p), &parallelizer_);
}

DecisionCache::Choice Framework::ChooseCached(CycleState& state, const Pod& pod, const Snapshot& snapshot,
                                              const DecisionCache::HeldNodes* held,
                                              std::optional<int64_t> tier) const {
  if (decision_cache_ == nullptr) return {};
  return decision_cache_->Choose(state, pod, snapshot, held, tier);
}

Status Framework::RunPreFilter(CycleState& state, const Pod& pod) const {
  for (PreFilterPlugin* p : pre_filter_) {
    Status st = p->PreFilter(state, pod);
    if (st.IsSkip()) {
      state.skip_filter.insert(std::string(p->Name()));
      continue;
    }
    if (!st.ok()) return st.WithPlugin(p->Name());
  }
  return Status::Ok();
}

namespace {

// The filters in order (those PreFilter skipped aside; with `quota_only`, only QuotaPlugins),
// stopping at the first rejection, which names its plugin.
Status RunFilterChain(const std::vector<FilterPlugin*>& filters, bool quota_only, const CycleState& state,
                      const Pod& pod, const NodeInfo& node) {
  for (const FilterPlugin* p : filters) {
    if (state.skip_filter.contains(p->Name())) continue;
    if (quota_only && dynamic_cast<const QuotaPlugin*>(p) == nullptr) continue;
    Status st = p->Filter(state, pod, node);
    if (!st.ok()) {
      if (!st.IsRejected() && st.code() != Code::kError) {
        st = Status::Error(StrCat("filter returned ", CodeName(st.code())));
      }
      return st.WithPlugin(p->Name());
    }
  }
  return Status::Ok();
}

}  // namespace

Status Framework::RunFilters(const CycleState& state, const Pod& pod, const NodeInfo& node) const {
  return RunFilterChain(filter_, /*quota_only=*/false, state, pod, node);
}

Status Framework::RunQuotaFilters(const CycleState& state, const Pod& pod, const NodeInfo& node) const {
  return RunFilterChain(filter_, /*quota_only=*/true, state, pod, node);
}

bool Framework::MayFitAfterFreeing(const CycleState& state, const Pod& pod, const NodeInfo& node,
                                   const Resources& freed) const {
  for (const FilterPlugin* p : filter_) {
    if (!state.skip_filter.contains(p->Name()) && !p->MayFitAfterFreeing(state, pod, node, freed)) return false;
  }
  return true;
}

FilterOutcome Framework::FindFeasibleNodes(const CycleState& state, const Pod& pod,
                                           const std::vector<NodeInfo*>& nodes,
                                           const NominatedPodMap* nominated) const {
  std::vector<Status> results(nodes.size());
  if (nominated != nullptr && !nominated->empty()) {
    parallelizer_.For(nodes.size(), [&](size_t i) {
      results[i] = RunFiltersWithNominatedPods(state, pod, *nodes[i], nominated);
    });
  } else {
    parallelizer_.For(nodes.size(), [&](size_t i) { results[i] = RunFilters(state, pod, *nodes[i]); });
  }
  FilterOutcome out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (results[i].ok()) {
      out.feasible.push_back(nodes[i]);
    } else {
      out.rejected.emplace(nodes[i]->name(), std::move(results[i]));
    }
  }
  return out;
}

namespace {

// The pods nominated to `node` that go before `pod`: at least as important, not the pod itself.
std::vector<PodRef> NominatedAhead(const Pod& pod, const NodeInfo& node, const NominatedPodMap* nominated) {
  std::vector<PodRef> ahead;
  if (nominated == nullptr) return ahead;
  auto it = nominated->find(node.name());
  if (it == nominated->end()) return ahead;
  for (const PodRef& other : it->second) {
    const bool itself = other->SameKey(pod);
    if (!itself && other->PriorityValue() >= pod.PriorityValue()) ahead.push_back(other);
  }
  return ahead;
}

}  // namespace

Status Framework::RunFiltersWithNominatedPods(const CycleState& state, const Pod& pod,
                                              const NodeInfo& node,
                                              const NominatedPodMap* nominated) const {
  // The node as it is first: its rejection is the one reported when both views fail, so a node
  // the decision cache saw rejected reads the same with nominations (RunCycle relies on it).
  if (Status st = RunFilters(state, pod, node); !st.ok()) return st;
  return RunFiltersBeside(state, pod, node, NominatedAhead(pod, node, nominated));
}

bool Framework::FitsBesideNominatedPods(const CycleState& state, const Pod& pod, const NodeInfo& node,
                                        const NominatedPodMap* nominated) const {
  const std::vector<PodRef> ahead = NominatedAhead(pod, node, nominated);
  if (ahead.empty()) return true;
  // The filters' arithmetic first: room the terminating pods leave, less what the nominated
  // pods take. Only when it may fit is the node copied and filtered.
  Resources freed;
  const bool summed = AddTerminatingRequests(node, freed);
  for (const PodRef& p : ahead) freed.Sub(p->requests);
  if (summed && !MayFitAfterFreeing(state, pod, node, freed)) return false;
  return RunFiltersBeside(state, pod, node, ahead).ok();
}

Status Framework::RunFiltersBeside(const CycleState& state, const Pod& pod, const NodeInfo& node,
                                   const std::vector<PodRef>& ahead) const {
  if (ahead.empty()) return Status::Ok();
  if (Status st = RunFiltersAsItWillBe(state, pod, node, ahead); !st.ok()) return st;
  return KeepsNominatedSpread(pod, node, ahead);
}

Status Framework::RunFiltersAsItWillBe(const CycleState& state, const Pod& pod, const NodeInfo& node,
                                       const std::vector<PodRef>& ahead) const {
  CycleState with_state = state.Clone();
  NodeInfo with_node = node;
  // The node as it will be: the terminating pods gone (a nominated pod's victims leave the room
  // it was nominated for: counting both would charge that room twice), the nominated pods there.
  if (Status st = RemoveTerminatingPods(with_state, pod, with_node); !st.ok()) return st;
  for (const PodRef& other : ahead) {
    Pod placed = *other;
    placed.node_name = node.name();
    auto ref = std::make_shared<const Pod>(std::move(placed));
    with_node.AddPod(ref);
    if (Status st = RunPreFilterExtensionAddPod(with_state, pod, *ref, with_node); !st.ok()) return st;
  }
  return RunFilters(with_state, pod, with_node);
}

namespace {

// Whether `pod` counts toward one of `nominated`'s DoNotSchedule spread constraints.
bool CountsForSpreadOf(const Pod& pod, const Pod& nominated) {
  if (pod.meta.namespace_ != nominated.meta.namespace_) return false;
  for (const TopologySpreadConstraint& c : nominated.topology_spread_constraints) {
    if (c.when_unsatisfiable == TopologySpreadConstraint::WhenUnsatisfiable::kDoNotSchedule &&
        MatchesLabelSelector(c.label_selector, pod.meta.labels)) {
      return true;
    }
  }
  return false;
}

}  // namespace

Status Framework::KeepsNominatedSpread(const Pod& pod, const NodeInfo& node,
                                       const std::vector<PodRef>& ahead) const {
  for (const PodRef& nominated : ahead) {
    if (!CountsForSpreadOf(pod, *nominated)) continue;
    // The nominated pod's view of the node as it will be: its own cycle state, the terminating
    // pods gone, the other nominated pods there; then with `pod` there too.
    CycleState state;
    if (!RunPreFilter(state, *nominated).ok()) continue;
    std::vector<PodRef> others;
    for (const PodRef& o : ahead) {
      if (o != nominated) others.push_back(o);
    }
    if (!RunFiltersAsItWillBe(state, *nominated, node, others).ok()) {
      continue;  // it does not fit there without the pod either: the pod takes nothing from it
    }
    others.push_back(std::make_shared<const Pod>(pod));
    if (!RunFiltersAsItWillBe(state, *nominated, node, others).ok()) {
      return Status::Unschedulable(StrCat("node is nominated to ", nominated->Key(),
                                          ", whose topology spread this pod would break"));
    }
  }
  return Status::Ok();
}

bool Framework::AddTerminatingRequests(const NodeInfo& node, Resources& room) {
  bool summed = true;
  for (const PodRef& p : node.pods()) {
    if (p->meta.deletion_timestamp.has_value()) summed = summed && room.Add(p->requests).ok();
  }
  return summed;
}

Status Framework::RemoveTerminatingPods(CycleState& state, const Pod& pod, NodeInfo& node) const {
  std::vector<PodRef> leaving;  // copied: removing from the node invalidates its list
  for (const PodRef& p : node.pods()) {
    if (p->meta.deletion_timestamp.has_value()) leaving.push_back(p);
  }
  for (const PodRef& p : leaving) {
    node.RemovePod(p->Key());
    if (Status st = RunPreFilterExtensionRemovePod(state, pod, *p, node); !st.ok()) return st;
  }
  return Status::Ok();
}

namespace {

// `with_skipped`: also the plugins whose PreFilter skipped their Filter (each extension then
// finds no state of its own; one that learns a constraint may build it and un-skip the Filter).
template <typename Call>
Status ForEachExtension(const std::vector<PreFilterPlugin*>& plugins, const CycleState& state,
                        bool with_skipped, Call call) {
  for (const PreFilterPlugin* p : plugins) {
    const PreFilterExtensions* ext = p->Extensions();
    if (ext == nullptr || (!with_skipped && state.skip_filter.contains(p->Name()))) continue;
    Status st = call(*ext);
    if (!st.ok()) return st.WithPlugin(p->Name());
  }
  return Status::Ok();
}

}  // namespace

Status Framework::RunPreFilterExtensionAddPod(CycleState& state, const Pod& to_schedule,
                                              const Pod& other, const NodeInfo& node) const {
  // A pod added can bring a constraint the PreFilter did not see (required anti-affinity).
  return ForEachExtension(pre_filter_, state, /*with_skipped=*/true, [&](const PreFilterExtensions& ext) {
    return ext.AddPod(state, to_schedule, other, node);
  });
}

Status Framework::RunPreFilterExtensionRemovePod(CycleState& state, const Pod& to_schedule,
                                                 const Pod& other, const NodeInfo& node) const {
  return ForEachExtension(pre_filter_, state, /*with_skipped=*/false, [&](const PreFilterExtensions& ext) {
    return ext.RemovePod(state, to_schedule, other, node);
  });
}

VictimVerdict Framework::RunVictimPolicies(const CycleState& state, const Pod& preemptor,
                                           const Pod& victim, std::string* reason) const {
  for (const VictimPolicyPlugin* p : victim_policies_) {
    VictimVerdict v = p->MayEvict(state, preemptor, victim, reason);
    if (v != VictimVerdict::kDefer) return v;
  }
  return VictimVerdict::kDefer;
}

bool Framework::VictimPoliciesMayAllowAtOrAbove(const CycleState& state, const Pod& preemptor,
                                                int32_t priority) const {
  for (const VictimPolicyPlugin* p : victim_policies_) {
    if (p->MayAllowAtOrAbove(state, preemptor, priority)) return true;
  }
  return false;
}

bool Framework::VictimPoliciesDeferEvery(const CycleState& state, const Pod& preemptor) const {
  return std::all_of(victim_policies_.begin(), victim_policies_.end(),
                     [&](const VictimPolicyPlugin* p) { return p->DefersEvery(state, preemptor); });
}

bool Framework::AppendNodeLocalFilterKey(const CycleState& state, const Pod& pod, std::string& key) const {
  for (const FilterPlugin* f : filter_) {
    if (state.skip_filter.contains(f->Name())) {
      key += "~|";
      continue;
    }
    const auto* local = dynamic_cast<const NodeLocalPlugin*>(f);
    if (local == nullptr || !local->AppendFilterKey(state, pod, key)) return false;
    key += '|';
    AppendKeyInt(local->ResultVersion(), key);
  }
  return true;
}

PostFilterResult Framework::RunPostFilter(CycleState& state, const Pod& pod, const NodeStatusMap& rejected,
                                          PostFilterOptions options) const {
  // One result for the plugins that ran: the status of the last one (the first that helped or
  // failed with an error), every victim any of them evicted, and the last nomination change, so
  // that a plugin that does not help undoes nothing an earlier one did.
  PostFilterResult out{Status::Unschedulable("no postFilter plugin helped")};
  for (PostFilterPlugin* p : post_filter_) {
    if (options.preemption_only && dynamic_cast<NoFitPostFilterPlugin*>(p) != nullptr) continue;
    PostFilterResult r = p->PostFilter(state, pod, rejected);
    r.status.WithPlugin(p->Name());
    out.victims.insert(out.victims.end(), std::make_move_iterator(r.victims.begin()),
                       std::make_move_iterator(r.victims.end()));
    if (r.nomination == PostFilterResult::Nomination::kOverride) {
      out.nomination = r.nomination;
      out.nominated_node = std::move(r.nominated_node);
    }
    out.status = std::move(r.status);
    if (out.status.ok() || out.status.code() == Code::kError) break;
  }
  return out;
}

GangPostFilterResult Framework::RunGangPostFilter(const PendingGang& gang) const {
  GangPostFilterResult out;
  for (GangPostFilterPlugin* p : gang_post_filter_) {
    if ((gang.preemption_only || gang.quota_short) && dynamic_cast<NoFitPostFilterPlugin*>(p) != nullptr) {
      if (gang.quota_short) (void)p->PostFilterGang(gang);  // told, makes no room
      continue;
    }
    out = p->PostFilterGang(gang);
    // A plan whose first eviction was refused made no room, but the gang tries it again.
    if (!out.victims.empty() || out.refused) break;
  }
  return out;
}

Status Framework::RunPreScore(CycleState& state, const Pod& pod,
                              const std::vector<const NodeInfo*>& feasible) const {
  for (PreScorePlugin* p : pre_score_) {
    Status st = p->PreScore(state, pod, feasible);
    if (st.IsSkip()) {
      state.skip_score.insert(std::string(p->Name()));
      continue;
    }
    if (!st.ok()) return st.WithPlugin(p->Name());
  }
  return Status::Ok();
}

absl::StatusOr<NodeScoreList> Framework::RunScore(const CycleState& state, const Pod& pod,
                                                  const std::vector<const NodeInfo*>& feasible) const {
  NodeScoreList total(feasible.size());
  for (size_t i = 0; i < feasible.size(); ++i) total[i].name = feasible[i]->name();
  std::vector<ScoreResult> raw(feasible.size());
  for (const WeightedScore& ws : score_) {
    if (state.skip_score.contains(ws.plugin->Name())) continue;
    parallelizer_.For(feasible.size(),
                      [&](size_t i) { raw[i] = ws.plugin->Score(state, pod, *feasible[i]); });
    NodeScoreList scores(feasible.size());
    for (size_t i = 0; i < feasible.size(); ++i) {
      if (!raw[i].status.ok()) {
        return absl::InternalError(StrCat("plugin ", ws.plugin->Name(), " failed to score node ",
                                                feasible[i]->name(), ": ", raw[i].status.Message()));
      }
      scores[i] = {total[i].name, raw[i].score};
    }
    if (Status st = ws.plugin->NormalizeScore(state, pod, scores); !st.ok()) {
      return absl::InternalError(StrCat("plugin ", ws.plugin->Name(),
                                              " failed to normalize scores: ", st.Message()));
    }
    for (size_t i = 0; i < feasible.size(); ++i) {
      if (scores[i].score < kMinNodeScore || scores[i].score > kMaxNodeScore) {
        return absl::InternalError(StrCat("plugin ", ws.plugin->Name(), " scored node ",
                                                scores[i].name, " ", scores[i].score,
                                                ", outside 0..100"));
      }
      total[i].score += scores[i].score * ws.weight;
    }
  }
  return total;
}

Status Framework::RunPreAssume(CycleState& state, Pod& assumed, const NodeInfo& node) const {
  for (PreAssumePlugin* p : pre_assume_) {
    Status st = p->PreAssume(state, assumed, node);
    if (!st.ok()) return st.WithPlugin(p->Name());
  }
  return Status::Ok();
}

Status Framework::RunReserve(CycleState& state, const Pod& pod, const std::string& node) const {
  for (size_t i = 0; i < reserve_.size(); ++i) {
    Status st = reserve_[i]->Reserve(state, pod, node);
    if (!st.ok()) {
      for (size_t k = i + 1; k-- > 0;) reserve_[k]->Unreserve(state, pod, node);
      return st.WithPlugin(reserve_[i]->Name());
    }
  }
  return Status::Ok();
}

void Framework::RunUnreserve(CycleState& state, const Pod& pod, const std::string& node) const {
  for (auto it = reserve_.rbegin(); it != reserve_.rend(); ++it) (*it)->Unreserve(state, pod, node);
}

PermitResult Framework::RunPermit(CycleState& state, const Pod& pod, const std::string& node) const {
  PermitResult result{Status::Ok(), absl::ZeroDuration()};
  for (PermitPlugin* p : permit_) {
    PermitResult r = p->Permit(state, pod, node);
    r.status.WithPlugin(p->Name());
    if (r.status.IsWait()) {
      // The pod waits for the longest-waiting plugin; any rejection wins over waiting.
      result.status = r.status;
      result.timeout = std::max(result.timeout, r.timeout);
    } else if (!r.status.ok()) {
      return r;
    }
  }
  return result;
}

Status Framework::RunPreBind(CycleState& state, const Pod& pod, const std::string& node) const {
  for (PreBindPlugin* p : pre_bind_) {
    Status st = p->PreBind(state, pod, node);
    if (!st.ok()) return st.WithPlugin(p->Name());
  }
  return Status::Ok();
}

Status Framework::RunBind(CycleState& state, const Pod& pod, const std::string& node) const {
  for (BindPlugin* p : bind_) {
    Status st = p->Bind(state, pod, node);
    if (st.IsSkip()) continue;
    return st.WithPlugin(p->Name());
  }
  return Status::Error("no bind plugin handled the pod");
}

bool Framework::IsQuotaPlugin(std::string_view name) const {
  return dynamic_cast<const QuotaPlugin*>(FindPlugin(name)) != nullptr;
}

std::string Framework::ExplainRejection(const Status& rejection, const CycleState& state, const Pod& pod,
                                        const NodeInfo& node) const {
  const auto* explaining = dynamic_cast<const ExplainingFilterPlugin*>(FindPlugin(rejection.plugin()));
  return explaining == nullptr ? std::string() : explaining->ExplainRejection(state, pod, node);
}

bool Framework::RejectedOnlyByQuota(const std::vector<std::string>& plugin_names) const {
  return !plugin_names.empty() && std::all_of(plugin_names.begin(), plugin_names.end(),
                                              [this](const std::string& p) { return IsQuotaPlugin(p); });
}

bool Framework::QuotaMayLift(const Status& rejection) const {
  return rejection.code() == Code::kUnschedulable && IsQuotaPlugin(rejection.plugin());
}

uint32_t Framework::EventsFor(const std::vector<std::string>& plugin_names) const {
  uint32_t events = 0;
  for (const std::string& name : plugin_names) {
    Plugin* p = FindPlugin(name);
    auto* ext = dynamic_cast<EnqueueExtensions*>(p);
    events |= ext ? ext->EventsToRegister() : kAllEvents;
  }
  return plugin_names.empty() ? kAllEvents : events;
}

uint32_t Framework::EventsHintedByRoom(const std::vector<std::string>& plugin_names) const {
  uint32_t hinted = plugin_names.empty() ? 0u : uint32_t{kAllEvents};
  for (const std::string& name : plugin_names) {
    auto* ext = dynamic_cast<EnqueueExtensions*>(FindPlugin(name));
    if (ext == nullptr) return 0;
    // An event it registered without a hint moves the pod whatever the room.
    hinted &= ~(ext->EventsToRegister() & ~ext->EventsHintedByRoom());
  }
  return hinted & EventsFor(plugin_names);
}

Resources Framework::RoomNeed(const std::vector<std::string>& plugin_names, const Pod& pod) const {
  Resources need;
  for (const std::string& name : plugin_names) {
    if (auto* ext = dynamic_cast<EnqueueExtensions*>(FindPlugin(name))) ext->AddRoomNeed(pod, need);
  }
  return need;
}

std::vector<std::string> Framework::PluginNames(std::string_view point) const {
  std::vector<std::string> out;
  auto names = [&](const auto& list) {
    for (const auto* p : list) out.emplace_back(p->Name());
  };
  if (point == "queueSort") out.emplace_back(queue_sort_->Name());
  if (point == "preFilter") names(pre_filter_);
  if (point == "filter") names(filter_);
  if (point == "postFilter") names(post_filter_);
  if (point == "preScore") names(pre_score_);
  if (point == "score") {
    for (const WeightedScore& ws : score_) out.emplace_back(ws.plugin->Name());
  }
  if (point == "reserve") names(reserve_);
  if (point == "permit") names(permit_);
  if (point == "preBind") names(pre_bind_);
  if (point == "bind") names(bind_);
  return out;
}

Plugin* Framework::FindPlugin(std::string_view name) const {
  for (const auto& p : owned_) {
    if (p->Name() == name) return p.get();
  }
  return nullptr;
}

}  // namespace tessel

namespace tessel {

absl::Status ClusterApi::AnnotateClaim(const PersistentVolumeClaim& claim, std::string_view,
                                       std::string_view) {
  return absl::UnimplementedError(StrCat("cannot annotate PersistentVolumeClaim ", claim.Key(),
                                         ": this cluster does not write claims"));
}

absl::Status ClusterApi::WriteResourceClaimStatus(const ObjectMeta& claim, const std::string&) {
  return absl::UnimplementedError(StrCat("cannot write the status of ResourceClaim ", claim.namespace_, "/",
                                         claim.name, ": this cluster does not write claims"));
}

absl::StatusOr<ObjectMeta> ClusterApi::CreateResourceClaim(const std::string&) {
  return absl::UnimplementedError("cannot create a ResourceClaim: this cluster does not write claims");
}

absl::Status ClusterApi::DeleteResourceClaim(const ObjectMeta& claim) {
  return absl::UnimplementedError(StrCat("cannot delete ResourceClaim ", claim.namespace_, "/", claim.name,
                                         ": this cluster does not write claims"));
}

absl::Status ClusterApi::WritePodExtendedResourceClaimStatus(const Pod& pod, const std::string&) {
  return absl::UnimplementedError(StrCat("cannot write the status of pod ", pod.Key(),
                                         ": this cluster does not write pod statuses"));
}

absl::Status ClusterApi::SetClaimRef(const PersistentVolume& volume, const PersistentVolumeClaim&) {
  return absl::UnimplementedError(StrCat("cannot bind PersistentVolume ", volume.name(),
                                         ": this cluster does not write volumes"));
}

}  // namespace tessel
