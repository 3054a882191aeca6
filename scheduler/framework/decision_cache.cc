// Per-shape node evaluations kept across cycles (see decision_cache.h).
#include "scheduler/framework/decision_cache.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>

#include "scheduler/framework/node_tiers.h"
#include "scheduler/util/least_recently_used.h"
#include "scheduler/util/strings.h"

namespace tessel {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::min();
constexpr int32_t kInfeasible = -1;
constexpr int32_t kScoreFailed = -2;  // feasible, but a Score failed: scored the full way
enum : uint8_t { kRejected = 0, kFeasible = 1, kFailed = 2 };

bool Reusable(const DecisionCache::HeldNodes& held) {
  return held.reuse && held.versions.size() == held.positions.size();
}

}  // namespace

struct DecisionCache::Entry {
  uint64_t last_used = 0;
  uint64_t epoch = 0;  // the snapshot change epoch it follows; 0: never synced
  size_t log_pos = 0;
  std::vector<int64_t> filter_versions;
  std::vector<int64_t> score_versions;
  std::vector<size_t> columns;     // the score plugins with a raw column (fixed by the key)
  std::vector<int64_t> gen;        // per node position: the generation evaluated
  std::vector<int32_t> bucket_of;  // per node position: its bucket, kInfeasible or kScoreFailed
  std::vector<int32_t> reject_of;  // per infeasible node position: its rejection
  std::vector<Status> rejections;  // distinct rejections, by Intern
  std::vector<int64_t> rejection_nodes;  // per rejection: the nodes that gave it now
  absl::flat_hash_map<std::string, int32_t> rejection_ids;
  std::unique_ptr<NodeStatusMap> rejected_by_name;  // see Rejections; null until asked
  int64_t feasible = 0;
  int64_t score_failed = 0;
  std::vector<Bucket> buckets;
  std::vector<int32_t> free_buckets;
  absl::flat_hash_map<Raw, int32_t> by_raw;
  // Per node position: the verdict beside the nominated pods (HeldNodes::reuse) and what it holds for.
  struct HeldVerdict {
    int64_t gen = kNever;
    uint64_t version = 0;
    int32_t priority = 0;
    bool fits = false;
    std::optional<Status> why;  // when it does not fit: the rejection, once asked
  };
  std::vector<HeldVerdict> held;
};

DecisionCache::DecisionCache(Profile profile, Parallelizer* parallelizer)
    : profile_(std::move(profile)), parallelizer_(parallelizer) {}

DecisionCache::~DecisionCache() = default;

DecisionCache::Entry& DecisionCache::EntryFor(std::string_view key) {
  auto it = entries_.find(key);
  if (it != entries_.end()) return *it->second;
  if (entries_.size() >= kMaxShapes) EraseLeastRecentlyUsed(entries_, [](const Entry& e) { return e.last_used; });
  auto& slot = entries_[std::string(key)];
  slot = std::make_unique<Entry>();
  slot->columns = columns_;
  return *slot;
}

DecisionCache::Column& DecisionCache::ColumnFor(std::string_view key, int64_t version, size_t nodes) {
  auto it = column_memo_.find(key);
  if (it == column_memo_.end()) {
    if (column_memo_.size() >= 2 * kMaxShapes) {
      EraseLeastRecentlyUsed(column_memo_, [](const Column& c) { return c.last_used; });
    }
    it = column_memo_.emplace(std::string(key), std::make_unique<Column>()).first;
  }
  Column& c = *it->second;
  c.last_used = clock_;
  if (c.version != version || c.gen.size() != nodes) {
    c.version = version;
    c.gen.assign(nodes, kNever);
    c.raw.assign(nodes, 0);
  }
  return c;
}

void DecisionCache::Place(Entry& e, int32_t i, bool feasible, const Raw& raw, bool score_error) {
  if (!feasible) {
    e.bucket_of[i] = kInfeasible;
    return;
  }
  ++e.feasible;
  if (score_error) {
    ++e.score_failed;
    e.bucket_of[i] = kScoreFailed;
    return;
  }
  auto [it, inserted] = e.by_raw.try_emplace(raw, 0);
  if (inserted) {
    if (e.free_buckets.empty()) {
      e.buckets.emplace_back();
      it->second = static_cast<int32_t>(e.buckets.size() - 1);
    } else {
      it->second = e.free_buckets.back();
      e.free_buckets.pop_back();
    }
    e.buckets[it->second].raw = raw;
  }
  const int32_t b = it->second;
  Bucket& bucket = e.buckets[b];
  ++bucket.count;
  e.bucket_of[i] = b;
  bucket.heap.push_back(i);
  std::push_heap(bucket.heap.begin(), bucket.heap.end(), std::greater<>());
  if (bucket.heap.size() > 2 * static_cast<size_t>(bucket.count) + 32) {
    // Drop the stale entries (nodes that left the bucket) and the repeats.
    std::sort(bucket.heap.begin(), bucket.heap.end());
    bucket.heap.erase(std::unique(bucket.heap.begin(), bucket.heap.end()), bucket.heap.end());
    std::erase_if(bucket.heap, [&](int32_t n) { return e.bucket_of[n] != b; });
    // A sorted vector is a valid min-heap.
  }
}

void DecisionCache::Unplace(Entry& e, int32_t i) {
  const int32_t b = e.bucket_of[i];
  e.bucket_of[i] = kInfeasible;
  if (b == kInfeasible) return;
  --e.feasible;
  if (b == kScoreFailed) {
    --e.score_failed;
    return;
  }
  Bucket& bucket = e.buckets[b];
  if (--bucket.count == 0) {
    e.by_raw.erase(bucket.raw);
    bucket.heap.clear();
    e.free_buckets.push_back(b);
  }
}

int32_t DecisionCache::FirstNode(Entry& e, int32_t b) {
  Bucket& bucket = e.buckets[b];
  while (e.bucket_of[bucket.heap.front()] != b) {
    std::pop_heap(bucket.heap.begin(), bucket.heap.end(), std::greater<>());
    bucket.heap.pop_back();
  }
  return bucket.heap.front();
}

int32_t DecisionCache::Intern(Entry& e, Status&& rejection) {
  rejection_key_.clear();
  AppendKeyInt(static_cast<int64_t>(rejection.code()), rejection_key_);
  AppendKeyString(rejection.plugin(), rejection_key_);
  for (const std::string& r : rejection.reasons()) AppendKeyString(r, rejection_key_);
  auto [it, inserted] = e.rejection_ids.try_emplace(rejection_key_, 0);
  if (inserted) {
    it->second = static_cast<int32_t>(e.rejections.size());
    e.rejections.push_back(std::move(rejection));
    e.rejection_nodes.push_back(0);
  }
  ++e.rejection_nodes[it->second];
  return it->second;
}

const NodeStatusMap* DecisionCache::Rejections(Entry& e, const Snapshot& snapshot) const {
  for (const Status& st : e.rejections) {
    if (st.code() == Code::kError) return nullptr;  // possibly; the full evaluation tells
  }
  if (e.rejected_by_name == nullptr) {
    e.rejected_by_name = std::make_unique<NodeStatusMap>();
    const std::vector<NodeInfo*>& nodes = snapshot.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (e.bucket_of[i] == kInfeasible) e.rejected_by_name->emplace(nodes[i]->name(), e.rejections[e.reject_of[i]]);
    }
  }
  return e.rejected_by_name.get();
}

void DecisionCache::ResetBuckets(Entry& e) {
  std::fill(e.bucket_of.begin(), e.bucket_of.end(), kInfeasible);
  e.feasible = 0;
  e.score_failed = 0;
  e.by_raw.clear();
  e.free_buckets.clear();
  for (size_t b = e.buckets.size(); b-- > 0;) {
    e.buckets[b].count = 0;
    e.buckets[b].heap.clear();
    e.free_buckets.push_back(static_cast<int32_t>(b));
  }
}

void DecisionCache::Sync(Entry& e, const CycleState& state, const Pod& pod, const Snapshot& snapshot) {
  const std::vector<NodeInfo*>& nodes = snapshot.nodes();
  const int32_t n = static_cast<int32_t>(nodes.size());
  // The raw score of column k on node position i, from the column memo when it holds the
  // node's generation (thread-safe: each i is written by one thread, plugins' Score is const).
  auto score_one = [&](size_t k, int32_t i, int64_t& out) -> bool {
    Column& c = *cycle_columns_[k];
    const int64_t gen = nodes[i]->generation();
    if (c.gen[i] == gen) {
      out = c.raw[i];
      return true;
    }
    ScoreResult r = profile_.scores[e.columns[k]].plugin->Score(state, pod, *nodes[i]);
    if (!r.status.ok()) return false;
    c.raw[i] = out = r.score;
    c.gen[i] = gen;
    return true;
  };
  auto score = [&](int32_t i, Raw& raw, size_t k, size_t end) -> uint8_t {
    for (; k < end; ++k) {
      if (!score_one(k, i, raw[k])) return kFailed;
    }
    return kFeasible;
  };
  // Every active Filter up to the first rejection (kept in `why` as Framework::RunFilters
  // reports it), then every column.
  auto evaluate = [&](int32_t i, Raw& raw, Status& why) -> uint8_t {
    if (tier_.has_value() && !InTier(state, *nodes[i], *tier_)) {
      why = Status::Unresolvable("the node is in another tier");
      return kRejected;
    }
    for (const FilterPlugin* f : active_filters_) {
      Status st = f->Filter(state, pod, *nodes[i]);
      if (st.ok()) continue;
      if (!st.IsRejected() && st.code() != Code::kError) {
        st = Status::Error(StrCat("filter returned ", CodeName(st.code())));
      }
      why = std::move(st.WithPlugin(f->Name()));
      return kRejected;
    }
    raw.fill(0);
    return score(i, raw, 0, e.columns.size());
  };
  // Rejections are kept once each; a table grown far beyond the nodes' (messages that kept
  // changing) is rebuilt with the rest.
  constexpr size_t kMaxRejections = 4096;
  if (e.epoch != snapshot.change_epoch() || e.gen.size() != nodes.size() ||
      e.filter_versions != filter_versions_ || e.rejections.size() > kMaxRejections) {
    // Everything again (nodes came or went, the log restarted, or a Filter's inputs moved).
    e.gen.assign(n, kNever);
    e.bucket_of.assign(n, kInfeasible);
    e.reject_of.assign(n, 0);
    e.rejections.clear();
    e.rejection_nodes.clear();
    e.rejection_ids.clear();
    e.rejected_by_name.reset();
    e.held.clear();
    ResetBuckets(e);
    scratch_raw_.resize(n);
    scratch_state_.resize(n);
    scratch_why_.resize(n);
    parallelizer_->For(n, [&](size_t i) {
      scratch_state_[i] = evaluate(static_cast<int32_t>(i), scratch_raw_[i], scratch_why_[i]);
    });
    for (int32_t i = 0; i < n; ++i) {
      e.gen[i] = nodes[i]->generation();
      if (scratch_state_[i] == kRejected) e.reject_of[i] = Intern(e, std::move(scratch_why_[i]));
      Place(e, i, scratch_state_[i] != kRejected, scratch_raw_[i], scratch_state_[i] == kFailed);
    }
  } else {
    const std::vector<uint32_t>& changes = snapshot.changes();
    Raw raw;
    Status why;
    for (size_t p = e.log_pos; p < changes.size(); ++p) {
      const int32_t i = static_cast<int32_t>(changes[p]);
      if (e.gen[i] == nodes[i]->generation()) continue;
      if (e.bucket_of[i] == kInfeasible) --e.rejection_nodes[e.reject_of[i]];
      Unplace(e, i);
      e.gen[i] = nodes[i]->generation();
      const uint8_t verdict = evaluate(i, raw, why);
      if (verdict == kRejected) e.reject_of[i] = Intern(e, std::move(why));
      if (e.rejected_by_name != nullptr) {
        if (verdict == kRejected) {
          e.rejected_by_name->insert_or_assign(nodes[i]->name(), e.rejections[e.reject_of[i]]);
        } else {
          e.rejected_by_name->erase(nodes[i]->name());
        }
      }
      Place(e, i, verdict != kRejected, raw, verdict == kFailed);
    }
    if (e.score_versions != score_versions_) {
      // Only a Score's inputs moved (e.g. FGD's learned workload): the feasible nodes keep their
      // verdicts; the moved columns are scored again.
      scratch_raw_.resize(n);
      scratch_state_.resize(n);
      for (int32_t i = 0; i < n; ++i) {
        const int32_t b = e.bucket_of[i];
        scratch_state_[i] = b == kInfeasible ? kRejected : b == kScoreFailed ? kFailed : kFeasible;
        if (b >= 0) scratch_raw_[i] = e.buckets[b].raw;
      }
      parallelizer_->For(n, [&](size_t i) {
        if (scratch_state_[i] == kRejected) return;
        Raw& raw = scratch_raw_[i];
        if (scratch_state_[i] == kFailed) {
          raw.fill(0);
          scratch_state_[i] = score(static_cast<int32_t>(i), raw, 0, e.columns.size());
          return;
        }
        for (size_t k = 0; k < e.columns.size(); ++k) {
          if (e.score_versions[k] == score_versions_[k]) continue;
          if (!score_one(k, static_cast<int32_t>(i), raw[k])) {
            scratch_state_[i] = kFailed;
            return;
          }
        }
      });
      ResetBuckets(e);
      for (int32_t i = 0; i < n; ++i) {
        Place(e, i, scratch_state_[i] != kRejected, scratch_raw_[i], scratch_state_[i] == kFailed);
      }
    }
  }
  e.epoch = snapshot.change_epoch();
  e.log_pos = snapshot.changes().size();
  e.filter_versions = filter_versions_;
  e.score_versions = score_versions_;
}

DecisionCache::Choice DecisionCache::ScoreAll(Entry& e, CycleState& state, const Pod& pod,
                                              const Snapshot& snapshot) {
  feasible_.clear();
  const std::vector<NodeInfo*>& nodes = snapshot.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (e.bucket_of[i] != kInfeasible) feasible_.push_back(nodes[i]);
  }
  absl::StatusOr<NodeScoreList> scores = profile_.run_score(state, pod, feasible_);
  if (!scores.ok()) return {.kind = Choice::Kind::kError, .error = scores.status()};
  size_t best = 0;
  for (size_t i = 1; i < scores->size(); ++i) {
    if ((*scores)[i].score > (*scores)[best].score) best = i;  // ties: the first by name
  }
  return {.kind = Choice::Kind::kChosen, .node = feasible_[best]};
}

DecisionCache::Choice DecisionCache::Choose(CycleState& state, const Pod& pod, const Snapshot& snapshot,
                                            const HeldNodes* held, std::optional<int64_t> tier) {
  sat_out_.clear();
  tier_ = tier;
  Choice c = ChooseUncounted(state, pod, snapshot, held);
  ++(c.kind == Choice::Kind::kFallback ? fallbacks_ : c.kind == Choice::Kind::kNoFit ? no_fit_ : answered_);
  if (held != nullptr && c.kind != Choice::Kind::kFallback) {
    ++with_held_;
    held_out_ += !sat_out_.empty();
  }
  return c;
}

DecisionCache::Choice DecisionCache::ChooseUncounted(CycleState& state, const Pod& pod,
                                                     const Snapshot& snapshot, const HeldNodes* held) {
  if (held_in_map_ != nullptr) {  // the last answer's held nodes leave the entry's map
    for (const std::string& name : held_names_) held_in_map_->rejected_by_name->erase(name);
    held_in_map_ = nullptr;
    held_names_.clear();
  }
  if (&snapshot != snapshot_) {
    entries_.clear();
    column_memo_.clear();
    snapshot_ = &snapshot;
  }
  // The shape key: what every active plugin reads of the pod, as each declares it.
  key_.clear();
  filter_versions_.clear();
  score_versions_.clear();
  active_filters_.clear();
  for (const FilterRef& f : profile_.filters) {
    if (state.skip_filter.contains(f.plugin->Name())) {
      key_ += "~|";
      continue;
    }
    if (f.local == nullptr || !f.local->AppendFilterKey(state, pod, key_)) return {};
    key_ += '|';
    filter_versions_.push_back(f.local->ResultVersion());
    active_filters_.push_back(f.plugin);
  }
  key_ += '#';
  columns_.clear();
  unused_.assign(profile_.scores.size(), false);
  for (size_t s = 0; s < profile_.scores.size(); ++s) {
    const ScoreRef& ref = profile_.scores[s];
    const size_t start = key_.size();
    const NodeLocalPlugin::ScoreUse use =
        ref.local == nullptr ? NodeLocalPlugin::ScoreUse::kOther : ref.local->AppendScoreKey(state, pod, key_);
    if (use == NodeLocalPlugin::ScoreUse::kOther) return {};
    if (use == NodeLocalPlugin::ScoreUse::kUnused) {
      key_.resize(start);
      key_ += "u|";
      unused_[s] = true;
    } else {
      // The column's own key: the plugin and what it reads of the pod.
      if (column_keys_.size() <= columns_.size()) column_keys_.emplace_back();
      std::string& column_key = column_keys_[columns_.size()];
      column_key.clear();
      AppendKeyInt(static_cast<int64_t>(s), column_key);
      column_key.append(key_, start, std::string::npos);
      key_ += "l|";
      columns_.push_back(s);
      score_versions_.push_back(ref.local->ResultVersion());
    }
  }
  for (const PreScoreRef& p : profile_.pre_scores) {
    if (p.local == nullptr || p.local->AppendScoreKey(state, pod, key_) == NodeLocalPlugin::ScoreUse::kOther) {
      return {};
    }
  }
  if (columns_.size() > kMaxColumns) return {};
  if (tier_.has_value()) {
    key_ += 'T';
    AppendKeyInt(*tier_, key_);
  }

  Entry& e = EntryFor(key_);
  e.last_used = ++clock_;
  cycle_columns_.clear();
  for (size_t k = 0; k < columns_.size(); ++k) {
    cycle_columns_.push_back(&ColumnFor(column_keys_[k], score_versions_[k], snapshot.size()));
  }
  Sync(e, state, pod, snapshot);
  if (e.feasible == 0) return NoFit(e, snapshot, held);
  if (held == nullptr) return ChooseAmongFeasible(e, state, pod, snapshot);
  // Held nodes that fit as they are but not with the pods nominated there sit out this choice.
  const std::vector<NodeInfo*>& nodes = snapshot.nodes();
  for (size_t k = 0; k < held->positions.size(); ++k) {
    const int64_t position = held->positions[k];
    if (position < 0 || static_cast<size_t>(position) >= nodes.size()) continue;
    const int32_t i = static_cast<int32_t>(position);
    const int32_t b = e.bucket_of[i];
    if (b == kInfeasible || FitsHeld(e, *held, k, i, *nodes[i])) continue;
    sat_out_.push_back({.position = i, .raw = b == kScoreFailed ? Raw{} : e.buckets[b].raw,
                        .score_failed = b == kScoreFailed});
    Unplace(e, i);
  }
  Choice c;
  if (e.feasible > 0) c = ChooseAmongFeasible(e, state, pod, snapshot);
  for (const SatOut& o : sat_out_) Place(e, o.position, true, o.raw, o.score_failed);
  return e.feasible > static_cast<int64_t>(sat_out_.size()) ? c : NoFit(e, snapshot, held);
}

bool DecisionCache::FitsHeld(Entry& e, const HeldNodes& held, size_t k, int32_t i, const NodeInfo& node) {
  if (!Reusable(held)) return held.fits_held(node);
  if (e.held.size() != e.gen.size()) e.held.assign(e.gen.size(), {});
  Entry::HeldVerdict& v = e.held[i];
  if (v.gen == node.generation() && v.version == held.versions[k] && v.priority == held.priority) {
    ++held_reused_;
    return v.fits;
  }
  v = {.gen = node.generation(), .version = held.versions[k], .priority = held.priority,
       .fits = held.fits_held(node), .why = std::nullopt};
  return v.fits;
}

DecisionCache::Choice DecisionCache::NoFit(Entry& e, const Snapshot& snapshot, const HeldNodes* held) {
  const std::vector<NodeInfo*>& nodes = snapshot.nodes();
  held_why_.clear();
  for (const SatOut& o : sat_out_) {  // (none sat out unless `held`)
    // A kept verdict was checked (or made) by FitsHeld in this cycle; its rejection is kept too.
    std::optional<Status>* kept = Reusable(*held) ? &e.held[o.position].why : nullptr;
    if (kept != nullptr && kept->has_value()) {
      held_why_.push_back(**kept);
    } else {
      held_why_.push_back(held->why_held(*nodes[o.position]));
      if (kept != nullptr) *kept = held_why_.back();
    }
    // An error, or (never expected) a pass: the full evaluation reports it.
    if (held_why_.back().ok() || held_why_.back().code() == Code::kError) return {};
  }
  const NodeStatusMap* rejected = Rejections(e, snapshot);
  if (rejected == nullptr) return {};
  histogram_.clear();
  for (size_t r = 0; r < e.rejections.size(); ++r) {
    if (e.rejection_nodes[r] > 0) histogram_.push_back({&e.rejections[r], e.rejection_nodes[r]});
  }
  // The held nodes' rejections join the entry's map until the next Choose takes them out.
  if (!sat_out_.empty()) held_in_map_ = &e;
  for (size_t k = 0; k < sat_out_.size(); ++k) {
    const std::string& name = nodes[sat_out_[k].position]->name();
    e.rejected_by_name->insert_or_assign(name, held_why_[k]);
    held_names_.push_back(name);
    histogram_.push_back({&held_why_[k], 1});
  }
  return {.kind = Choice::Kind::kNoFit, .rejected = rejected, .histogram = &histogram_};
}

DecisionCache::Choice DecisionCache::ChooseAmongFeasible(Entry& e, CycleState& state, const Pod& pod,
                                                         const Snapshot& snapshot) {
  const std::vector<NodeInfo*>& nodes = snapshot.nodes();

  // Any feasible node, for PreScore (which reads only whether the list is empty) and for a
  // cluster where only one node fits (then, as in a full evaluation, nothing is scored).
  live_.clear();
  for (int32_t b = 0; b < static_cast<int32_t>(e.buckets.size()); ++b) {
    if (e.buckets[b].count > 0) live_.push_back(b);
  }
  int32_t any = -1;
  if (!live_.empty()) {
    any = FirstNode(e, live_.front());
  } else {
    for (size_t i = 0; i < nodes.size() && any < 0; ++i) {
      if (e.bucket_of[i] == kScoreFailed) any = static_cast<int32_t>(i);
    }
  }
  if (e.feasible == 1) return {.kind = Choice::Kind::kChosen, .node = nodes[any]};

  feasible_.assign(1, nodes[any]);
  if (Status ps = profile_.run_pre_score(state, pod, feasible_); !ps.ok()) {
    return {.kind = Choice::Kind::kError, .error = absl::InternalError(ps.Message())};
  }
  bool by_buckets = e.score_failed == 0;
  for (size_t s = 0; s < profile_.scores.size() && by_buckets; ++s) {
    by_buckets = state.skip_score.contains(profile_.scores[s].plugin->Name()) == unused_[s];
  }
  if (!by_buckets) return ScoreAll(e, state, pod, snapshot);

  totals_.assign(live_.size(), 0);
  for (size_t k = 0; k < e.columns.size(); ++k) {
    const ScoreRef& ref = profile_.scores[e.columns[k]];
    normalized_.resize(live_.size());
    for (size_t j = 0; j < live_.size(); ++j) {
      normalized_[j].name.clear();
      normalized_[j].score = e.buckets[live_[j]].raw[k];
    }
    if (!ref.plugin->NormalizeScore(state, pod, normalized_).ok()) return ScoreAll(e, state, pod, snapshot);
    for (size_t j = 0; j < live_.size(); ++j) {
      const int64_t v = normalized_[j].score;
      if (v < kMinNodeScore || v > kMaxNodeScore) return ScoreAll(e, state, pod, snapshot);
      totals_[j] += v * ref.weight;
    }
  }
  int32_t best = -1;
  int64_t best_total = 0;
  for (size_t j = 0; j < live_.size(); ++j) {
    if (best >= 0 && totals_[j] < best_total) continue;
    const int32_t first = FirstNode(e, live_[j]);
    if (best < 0 || totals_[j] > best_total || first < best) {
      best = first;
      best_total = totals_[j];
    }
  }
  return {.kind = Choice::Kind::kChosen, .node = nodes[best]};
}

}  // namespace tessel
