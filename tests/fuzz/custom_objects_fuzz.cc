// libFuzzer target: the decoders of Tessel's own objects and of the gang objects it reads, on
// arbitrary JSON text: Queue (scheduler/quota/queue.h), Cohort (cohort.h), ResourceFlavor
// (flavor.h), and the scheduler-plugins PodGroup, the v1alpha2 PodGroup and the Workload
// (scheduler/gang/gang_api.h).
// Each must answer with a value or an error naming the object, never throw; a Queue that does
// not decode still yields its readable spec.namespaces (what holds its pods). What a decoded
// object promises must hold: a Queue's amounts are not negative, it lends at most its nominal
// quota, its weight is positive, and a QueueDirectory takes it; a PodGroup's counts are not
// negative; a Cohort never names itself as its parent.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_checks.h"
#include "nlohmann/json.hpp"
#include "scheduler/api/decode.h"
#include "scheduler/gang/gang_api.h"
#include "scheduler/quota/cohort.h"
#include "scheduler/quota/flavor.h"
#include "scheduler/quota/queue.h"

namespace {

using tessel::fuzz::CheckNamed;

void CheckQueue(const tessel::Queue& q) {
  for (const auto& [name, amount] : q.nominal.Entries()) {
    if (amount < 0) std::abort();
  }
  for (const auto& [name, limit] : q.lending_limit) {
    if (limit < 0 || limit > q.nominal.Get(name)) std::abort();
  }
  for (const auto& [name, limit] : q.borrowing_limit) {
    if (limit < 0) std::abort();
  }
  if (q.weight_milli <= 0) std::abort();
  tessel::QueueDirectory directory;
  if (!directory.Set({q}).ok()) std::abort();  // one queue alone never conflicts
}

// The same object as each kind, so that every decoder reads every shape.
nlohmann::json As(nlohmann::json object, std::string_view api_version, std::string_view kind) {
  if (!object.is_object()) return object;
  object["apiVersion"] = api_version;
  object["kind"] = kind;
  return object;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return 0;

  const nlohmann::json queue_object = As(object, "tessel.io/v1alpha1", "Queue");
  const absl::StatusOr<tessel::Queue> queue = tessel::DecodeQueue(queue_object);
  CheckNamed(queue, tessel::DescribeObject(queue_object));
  if (queue.ok()) CheckQueue(*queue);
  for (const std::string& ns : tessel::ReadQueueNamespaces(queue_object)) {
    if (ns.empty()) std::abort();
  }
  (void)tessel::ObjectName(object);

  const nlohmann::json cohort_object = As(object, "tessel.io/v1alpha1", "Cohort");
  const absl::StatusOr<tessel::Cohort> cohort = tessel::DecodeCohort(cohort_object);
  CheckNamed(cohort, tessel::DescribeObject(cohort_object));
  if (cohort.ok() && !cohort->parent.empty() && cohort->parent == cohort->name()) std::abort();

  const nlohmann::json flavor_object = As(object, "tessel.io/v1alpha1", "ResourceFlavor");
  CheckNamed(tessel::DecodeResourceFlavor(flavor_object), tessel::DescribeObject(flavor_object));

  const nlohmann::json pg_object = As(object, tessel::gang::kPodGroupApiVersion, "PodGroup");
  const absl::StatusOr<tessel::gang::PodGroup> pg = tessel::gang::DecodePodGroup(pg_object);
  CheckNamed(pg, tessel::DescribeObject(pg_object));
  if (pg.ok() && (pg->min_member < 0 || pg->status.scheduled < 0 || pg->status.running < 0)) std::abort();

  const nlohmann::json spg_object = As(object, tessel::gang::kSchedulingPodGroupApiVersion, "PodGroup");
  CheckNamed(tessel::gang::DecodeSchedulingPodGroup(spg_object), tessel::DescribeObject(spg_object));
  const nlohmann::json workload_object = As(object, tessel::gang::kWorkloadApiVersion, "Workload");
  CheckNamed(tessel::gang::DecodeWorkload(workload_object), tessel::DescribeObject(workload_object));
  return 0;
}
