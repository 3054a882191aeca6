// Whether a waiting job is owed room (see owed_room.h).
#include "bench/trace/owed_room.h"

#include <algorithm>
#include <set>

#include "bench/trace/entitlement.h"

namespace tessel::bench {
namespace {

// Subsets of at most this many pods of a node are tried as its victims.
constexpr size_t kMaxCandidates = 16;

}  // namespace

OwedRoom::OwedRoom(std::map<std::string, std::string> parent, const std::map<std::string, ShareSample>& shares)
    : parent_(std::move(parent)) {
  for (const auto& [name, s] : shares) over_[name] = s.usage_milli - s.entitlement_milli;
}

bool OwedRoom::Fits(const std::string& queue, std::vector<int64_t> pod_milli, std::vector<RoomNode> nodes) const {
  std::map<std::string, int64_t> over = over_;
  const std::vector<std::string> own = PathUp(parent_, queue);
  const std::set<std::string> own_set(own.begin(), own.end());
  auto over_of = [&over](const std::string& name) {
    auto it = over.find(name);
    return it == over.end() ? int64_t{0} : it->second;
  };
  // A victim's subtrees that lose it: its path below where it meets `own` (all of it when the
  // trees are apart); and `own`'s subtrees below that meeting point, which gain the pod.
  struct Side {
    std::vector<std::string> losing, gaining;
  };
  auto sides = [&](const std::string& victim_queue) {
    Side s;
    std::string meet;
    for (const std::string& n : PathUp(parent_, victim_queue)) {
      if (own_set.contains(n)) {
        meet = n;
        break;
      }
      s.losing.push_back(n);
    }
    for (const std::string& n : own) {
      if (n == meet) break;
      s.gaining.push_back(n);
    }
    return s;
  };
  std::sort(pod_milli.begin(), pod_milli.end(), std::greater<>());
  for (const int64_t want : pod_milli) {
    bool placed = false;
    for (RoomNode& node : nodes) {
      std::vector<size_t> victims;
      if (node.free_milli < want) {
        // Candidates: other queues' pods of a tree the check knows, whose taking keeps the
        // preemptor's side within its entitlement; the largest first.
        std::vector<std::pair<size_t, Side>> candidates;
        for (size_t i = 0; i < node.pods.size(); ++i) {
          const auto& [q, milli] = node.pods[i];
          if (q == queue || !parent_.contains(q) || milli <= 0) continue;
          Side s = sides(q);
          if (std::all_of(s.gaining.begin(), s.gaining.end(), [&](const std::string& y) { return over_of(y) + want <= 0; })) {
            candidates.emplace_back(i, std::move(s));
          }
        }
        std::stable_sort(candidates.begin(), candidates.end(), [&](const auto& a, const auto& b) {
          return node.pods[a.first].second > node.pods[b.first].second;
        });
        if (candidates.size() > kMaxCandidates) candidates.resize(kMaxCandidates);
        int64_t best = -1;
        uint32_t best_mask = 0;
        for (uint32_t mask = 1; mask < (uint32_t{1} << candidates.size()); ++mask) {
          int64_t sum = 0;
          std::map<std::string, int64_t> taken;
          for (size_t c = 0; c < candidates.size(); ++c) {
            if (!(mask & (uint32_t{1} << c))) continue;
            const int64_t milli = node.pods[candidates[c].first].second;
            sum += milli;
            for (const std::string& x : candidates[c].second.losing) taken[x] += milli;
          }
          if (node.free_milli + sum < want || (best >= 0 && sum >= best)) continue;
          if (std::all_of(taken.begin(), taken.end(), [&](const auto& t) { return t.second <= over_of(t.first); })) {
            best = sum;
            best_mask = mask;
          }
        }
        if (best < 0) continue;
        for (size_t c = 0; c < candidates.size(); ++c) {
          if (!(best_mask & (uint32_t{1} << c))) continue;
          const int64_t milli = node.pods[candidates[c].first].second;
          for (const std::string& x : candidates[c].second.losing) over[x] -= milli;
          victims.push_back(candidates[c].first);
          node.free_milli += milli;
        }
      }
      std::sort(victims.rbegin(), victims.rend());
      for (size_t i : victims) node.pods.erase(node.pods.begin() + static_cast<std::ptrdiff_t>(i));
      node.free_milli -= want;
      node.pods.emplace_back(queue, want);
      for (const std::string& y : own) over[y] += want;
      placed = true;
      break;
    }
    if (!placed) return false;
  }
  return true;
}

}  // namespace tessel::bench
