// Preemption's dry-run answers between attempts (see candidate_memo.h).
#include "scheduler/preemption/candidate_memo.h"

#include "scheduler/util/least_recently_used.h"

namespace tessel::preemption {

const std::optional<Candidate>* CandidateMemo::Table::Find(const NodeInfo& node, uint64_t nominations) const {
  auto it = slots_.find(node.name());
  if (it == slots_.end() || it->second.generation != node.generation() ||
      it->second.nominations != nominations) {
    return nullptr;
  }
  return &it->second.answer;
}

void CandidateMemo::Table::Keep(const NodeInfo& node, uint64_t nominations,
                                const std::optional<Candidate>& answer) {
  Slot& slot = slots_[node.name()];
  slot.generation = node.generation();
  slot.nominations = nominations;
  slot.answer = answer;
}

CandidateMemo::Table& CandidateMemo::For(std::string_view key, size_t nodes) {
  auto it = tables_.find(key);
  if (it == tables_.end()) {
    if (tables_.size() >= kMaxTables) EraseLeastRecentlyUsed(tables_, [](const Table& t) { return t.last_used_; });
    it = tables_.emplace(std::string(key), std::make_unique<Table>()).first;
  }
  Table& table = *it->second;
  if (table.slots_.size() > 2 * nodes) table.slots_.clear();
  table.last_used_ = ++clock_;
  return table;
}

}  // namespace tessel::preemption
