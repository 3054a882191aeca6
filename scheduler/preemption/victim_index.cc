// The nodes preemption may find victims on (see victim_index.h).
#include "scheduler/preemption/victim_index.h"

#include <algorithm>
#include <bit>

namespace tessel::preemption {

void VictimIndex::Clear(uint32_t pos) {
  NodeSummary& s = nodes_[pos];
  if (s.lowest != kNone) {
    auto it = by_lowest_.find(s.lowest);
    it->second.erase(pos);
    if (it->second.empty()) by_lowest_.erase(it);
  }
  if (s.unresolved) unresolved_.erase(pos);
  if (s.terminating) terminating_.erase(pos);
  s = NodeSummary{};
}

void VictimIndex::Set(uint32_t pos, const NodeSummary& s) {
  Clear(pos);
  nodes_[pos] = s;
  if (s.lowest != kNone) by_lowest_[s.lowest].insert(pos);
  if (s.unresolved) unresolved_.insert(pos);
  if (s.terminating) terminating_.insert(pos);
}

void VictimIndex::Sync(const Snapshot& snapshot) {
  const std::vector<NodeInfo*>& nodes = snapshot.nodes();
  auto summarize = [&](uint32_t pos) {
    const NodeInfo& info = *nodes[pos];
    if (nodes_[pos].generation == info.generation()) return;
    NodeSummary s;
    s.generation = info.generation();
    for (const PodRef& p : info.pods()) {
      if (p->meta.deletion_timestamp.has_value()) {
        s.terminating = true;
      } else if (p->priority.has_value()) {
        s.lowest = std::min(s.lowest, *p->priority);
      } else {
        s.unresolved = true;
      }
    }
    Set(pos, s);
  };
  auto reset = [&] {
    nodes_.assign(nodes.size(), NodeSummary{});
    by_lowest_.clear();
    unresolved_.clear();
    terminating_.clear();
  };
  log_.Read(snapshot, nodes_.size(), reset, summarize);
}

bool VictimIndex::MayHaveVictims(const Query& q) const {
  if (nodes_.empty()) return false;
  if (q.any_priority || !terminating_.empty()) return true;
  if (!by_lowest_.empty() && by_lowest_.begin()->first < q.priority) return true;
  return !unresolved_.empty() && q.floor < q.priority;
}

std::vector<uint64_t> VictimIndex::Marks(const Query& q) const {
  const size_t n = nodes_.size();
  std::vector<uint64_t> bits((n + 63) / 64, 0);
  auto mark = [&](uint32_t pos) { bits[pos / 64] |= uint64_t{1} << (pos % 64); };
  if (q.any_priority) {
    for (uint32_t pos = 0; pos < n; ++pos) mark(pos);
    return bits;
  }
  for (uint32_t pos : terminating_) mark(pos);
  for (auto it = by_lowest_.begin(); it != by_lowest_.end() && it->first < q.priority; ++it) {
    for (uint32_t pos : it->second) mark(pos);
  }
  if (q.floor < q.priority) {
    for (uint32_t pos : unresolved_) mark(pos);
  }
  return bits;
}

void VictimIndex::ForEachFrom(uint32_t offset, const Query& q,
                              const std::function<bool(uint32_t)>& visit) const {
  if (!MayHaveVictims(q)) return;
  const std::vector<uint64_t> bits = Marks(q);
  const uint32_t n = static_cast<uint32_t>(nodes_.size());
  offset %= n;
  // [offset, n), then [0, offset): each marked bit in position order.
  auto walk = [&](uint32_t from, uint32_t to) {
    for (uint32_t w = from / 64; w * 64 < to; ++w) {
      uint64_t word = bits[w];
      if (w == from / 64) word &= ~uint64_t{0} << (from % 64);
      while (word != 0) {
        const uint32_t pos = w * 64 + static_cast<uint32_t>(std::countr_zero(word));
        if (pos >= to) return true;
        if (!visit(pos)) return false;
        word &= word - 1;
      }
    }
    return true;
  };
  if (walk(offset, n)) walk(0, offset);
}

size_t VictimIndex::CountFor(const Query& q) const {
  if (!MayHaveVictims(q)) return 0;
  size_t count = 0;
  for (uint64_t word : Marks(q)) count += static_cast<size_t>(std::popcount(word));
  return count;
}

}  // namespace tessel::preemption
