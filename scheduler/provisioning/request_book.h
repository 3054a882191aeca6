// The state machine of the ProvisioningRequests Tessel keeps for gangs, one current request
// per gang. Pure and thread-safe: the core asks (Shortfall, on the scheduling thread), the
// informer reports what the provisioner did (Observe, Removed), and the answer says what to
// create, what to delete and what to tell the users. The live glue executes the writes
// (scheduler/kube/provisioning_controller.h).
//
//   gang short of capacity, no request  -> create attempt 1             "waiting for ..."
//   ... but `max_open` requests are open-> wait for one to close (kCapped), create nothing
//   request pending (Accepted or none)  -> wait
//   Provisioned=True                    -> wait for the new nodes (the gang is retried when they come);
//                                          after `nodes_grace` say they may not fit the gang
//   BookingExpired / CapacityRevoked    -> delete it, create the next attempt at once
//   Failed=True (or its creation failed)-> report the reason; the next attempt after `failed_retry`
//   gang placed (anywhere) or deleted   -> Release: delete its requests
// Members first seen after their gang's request was made are handed out to annotate as its
// consumers (Step::consume), once per request.
//
//   RequestBook book({.failed_retry = absl::Minutes(10), .max_open = 100});
//   Step s = book.Shortfall({.gang_key = ..., .namespace_ = ..., .marking = ...}, member_keys, now);
//   book.Observe(*DecodeRequest(json), now);
//   for (const RequestRef& r : book.Release(gang_key)) delete r;
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/provisioning/provisioning_request.h"

namespace tessel::provisioning {

// One request, by namespace and name.
struct RequestRef {
  std::string namespace_;
  std::string name;
  bool operator==(const RequestRef&) const = default;
  auto operator<=>(const RequestRef&) const = default;
};

// A gang that the current nodes cannot host only for lack of capacity.
struct Ask {
  std::string gang_key;   // GangId::Key()
  std::string namespace_;
  Marking marking;
  OwnerReference owner;
  FlavorNodes nodes;  // the flavors the gang would use (empty for a flat queue)
};

// Pods to annotate as consumers of a request (cluster-autoscaler's consume-provisioning-request
// and provisioning-class-name).
struct Consume {
  std::string request;
  std::string class_name;
  std::vector<std::string> pods;  // "namespace/name"
};

// What to do for one shortfall.
struct Step {
  enum class Kind {
    kCreate,  // create `create` (its templates first); the gang waits for it
    kWait,    // a request is in flight: the gang waits for it
    kFailed,  // the last request failed: the gang stays pending with `message`
    kCapped,  // max_open requests are open: nothing is created; the gang waits for one to close
  };
  Kind kind = Kind::kWait;
  RequestSpec create;               // kCreate: owner, marking and name filled in
  std::vector<RequestRef> remove;   // requests the gang no longer needs (expired, revoked, failed)
  std::string message;              // what the gang's pods and PodGroup say about it
  Consume consume;                  // kWait, kFailed: members new since the request was made
};

struct RequestBookOptions {
  // How long a gang whose request failed waits before it asks again.
  absl::Duration failed_retry = absl::Minutes(10);
  // How long after Provisioned=True a gang that still does not fit is told that the nodes may
  // not fit it (it keeps waiting until the booking expires).
  absl::Duration nodes_grace = absl::Minutes(5);
  // At most this many requests open (pending or Provisioned) at once; 0: no limit.
  int64_t max_open = 100;
};

class RequestBook {
 public:
  explicit RequestBook(RequestBookOptions options = {}) : options_(options) {}

  // `members`: the gang's pending members ("namespace/name").
  Step Shortfall(const Ask& ask, const std::vector<std::string>& members, absl::Time now);
  // The request as the informer sees it now. A request of a gang the book does not know (after
  // a restart) is adopted: the highest attempt is current, older ones are removed later.
  void Observe(const ObservedRequest& request, absl::Time now);
  // The request is gone (deleted by Tessel, a user, or collected with its owner).
  void Removed(const RequestRef& request);
  // Creating the request failed (`error`): it counts as Failed now.
  void CreateFailed(const std::string& gang_key, const RequestRef& request, const std::string& error,
                    absl::Time now);
  // The gang was placed, or deleted: every request it had, to delete. The gang is forgotten.
  std::vector<RequestRef> Release(const std::string& gang_key);

  // The gang's current request, if any.
  std::optional<RequestRef> Current(const std::string& gang_key) const;
  std::optional<RequestPhase> PhaseOf(const std::string& gang_key) const;
  // The gang's requests being waited on, or failed: for tests and metrics.
  size_t size() const;
  // Requests open now (pending or Provisioned), and whether a gang waits for one to close.
  int64_t open() const;
  bool AnyCapped() const;

 private:
  struct GangRequests {
    std::string namespace_;
    std::string class_name;
    int32_t attempt = 0;  // of the current request; 0: none yet
    std::string name;     // the current request; "" when none
    RequestPhase phase = RequestPhase::kPending;
    std::string reason, message;
    std::string flavors;  // the flavors it asks nodes of, for messages ("" for a flat queue)
    std::optional<absl::Time> failed_at;
    std::optional<absl::Time> provisioned_at;  // when the book first saw Provisioned=True
    std::vector<RequestRef> stale;  // earlier attempts still to delete
    std::set<std::string> consumers;  // members annotated for the current request
    bool capped = false;  // waits for an open request to close
    bool open() const {
      return !name.empty() && (phase == RequestPhase::kPending || phase == RequestPhase::kProvisioned);
    }
  };
  Step Decide(const Ask& ask, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Step Create(const Ask& ask, GangRequests& g, std::string why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t OpenLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static std::string Describe(const GangRequests& g);

  const RequestBookOptions options_;
  mutable absl::Mutex mu_;
  std::map<std::string, GangRequests> gangs_ ABSL_GUARDED_BY(mu_);  // by gang key
  // Requests handed out to delete (Release, Step::remove), until the informer says they are
  // gone: their late updates must not bring a released gang back.
  std::set<RequestRef> deleting_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessel::provisioning
