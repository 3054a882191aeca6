// `tessel-bench trace`, whose wait a stretch below the entitlement is: whether a waiting job of a
// queue could run in room that the others owe it, given the jobs' sizes. The entitlement
// (entitlement.h) is fluid; the pods are not: a team entitled to 32 GPUs that holds 28 beside a
// sibling entitled to 20 that holds three 8-GPU pods waits for no scheduler, since taking one of
// those pods leaves the sibling at 16, further below its 20 than the team is below its 32.
//
// A job of queue p is owed room when its pods (largest first, each on the first node where it
// fits) fit in free GPUs plus victims whose eviction leaves every subtree that loses them, from
// the victim's queue up to (not including) the cohort where its path meets p's, at or above its
// entitlement, and leaves every subtree on p's side of that cohort at or below its entitlement
// once it holds the job. A node's victims are the fewest GPUs that do (every subset of its
// other queues' pods is tried, up to the 16 largest). GPUs are counted in milli per node;
// devices are not modelled (every job of the organisation scenarios asks whole GPUs).
//
//   std::vector<RoomNode> nodes = {{.free_milli = 0, .pods = {{"lang", 8000}}}};
//   OwedRoom owed(parents, shares);  // the quota tree and one sample's usage and entitlement
//   owed.Fits("vision", {1000});     // false when lang's 8 GPUs would take it below its share
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/trace/timeline.h"

namespace tessel::bench {

// A node as the check sees it: its free GPU milli and its pods' queues and GPU milli.
struct RoomNode {
  int64_t free_milli = 0;
  std::vector<std::pair<std::string, int64_t>> pods;
};

class OwedRoom {
 public:
  // `parent`: every queue's and cohort's parent ("" for a root); `shares`: one sample's usage
  // and entitlement by name (absent: 0).
  OwedRoom(std::map<std::string, std::string> parent, const std::map<std::string, ShareSample>& shares);

  // Whether a job of `queue` asking `pod_milli` (one entry per pod) is owed room on `nodes`.
  // The caller checks that the job fits within the queue's entitlement.
  bool Fits(const std::string& queue, std::vector<int64_t> pod_milli, std::vector<RoomNode> nodes) const;

 private:
  std::map<std::string, std::string> parent_;
  std::map<std::string, int64_t> over_;  // usage - entitlement, GPU milli
};

}  // namespace tessel::bench
