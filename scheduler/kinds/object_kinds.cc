// The kind table (see object_kinds.h).
#include "scheduler/kinds/object_kinds.h"

#include <array>

#include "nlohmann/json.hpp"
#include "scheduler/api/decode.h"
#include "scheduler/gang/gang_api.h"
#include "scheduler/quota/queue.h"

namespace tessel {
namespace {

using nlohmann::json;

struct ReadKind {
  std::string_view kind;
  std::string_view api_version;  // the apiVersion, or its group with a trailing '/' (any version)
  absl::Status (*deliver)(Scheduler&, const json&);
  void (*remove)(Scheduler&, std::string_view key);

  bool Matches(std::string_view api, std::string_view k) const {
    if (k != kind) return false;
    return api_version.ends_with('/') ? api.starts_with(api_version) : api == api_version;
  }
};

// A gang object that does not decode keeps the version the book has; the scheduler is told, so
// that members of one it never read do not wait in silence.
template <typename T, absl::StatusOr<T> (*Decode)(const json&), gang::GangKind kKind>
absl::Status DeliverGang(Scheduler& s, const json& object) {
  absl::StatusOr<T> decoded = Decode(object);
  if (!decoded.ok()) {
    std::string ns;
    if (const auto m = object.find("metadata"); m != object.end() && m->is_object()) {
      if (const auto n = m->find("namespace"); n != m->end() && n->is_string()) ns = n->get<std::string>();
    }
    s.OnGangObjectUndecodable(kKind, ns.empty() ? "default" : ns, ObjectName(object), decoded.status());
    return decoded.status();
  }
  s.OnGangObject(*std::move(decoded));
  return absl::OkStatus();
}

template <gang::GangKind kKind>
void RemoveGang(Scheduler& s, std::string_view key) {
  s.OnGangObjectDelete(kKind, key);
}

absl::Status DeliverQueue(Scheduler& s, const json& object) {
  absl::StatusOr<Queue> queue = DecodeQueue(object);
  if (queue.ok()) return s.OnQueue(*std::move(queue));
  return s.OnQueueUndecodable(ObjectName(object), queue.status(), ReadQueueNamespaces(object));
}

void RemoveQueue(Scheduler& s, std::string_view key) { s.OnQueueDelete(std::string(key)); }

absl::Status DeliverResourceFlavor(Scheduler& s, const json& object) {
  absl::StatusOr<ResourceFlavor> flavor = DecodeResourceFlavor(object);
  if (flavor.ok()) {
    s.OnResourceFlavor(*std::move(flavor));
    return absl::OkStatus();
  }
  return s.OnResourceFlavorUndecodable(ObjectName(object), flavor.status());
}

void RemoveResourceFlavor(Scheduler& s, std::string_view key) { s.OnResourceFlavorDelete(std::string(key)); }

absl::Status DeliverCohort(Scheduler& s, const json& object) {
  absl::StatusOr<Cohort> cohort = DecodeCohort(object);
  if (cohort.ok()) {
    s.OnCohort(*std::move(cohort));
    return absl::OkStatus();
  }
  return s.OnCohortUndecodable(ObjectName(object), cohort.status());
}

void RemoveCohort(Scheduler& s, std::string_view key) { s.OnCohortDelete(std::string(key)); }

constexpr std::array kReadKinds{
    ReadKind{"PodGroup", gang::kPodGroupApiVersion, DeliverGang<gang::PodGroup, gang::DecodePodGroup, gang::GangKind::kPodGroup>,
             RemoveGang<gang::GangKind::kPodGroup>},
    // The scheduling.k8s.io PodGroup, each version Tessel reads (gang::kSchedulingPodGroupVersions).
    ReadKind{"PodGroup", gang::kSchedulingPodGroupV1beta1,
             DeliverGang<gang::SchedulingPodGroup, gang::DecodeSchedulingPodGroup, gang::GangKind::kSchedulingPodGroup>,
             RemoveGang<gang::GangKind::kSchedulingPodGroup>},
    ReadKind{"PodGroup", gang::kSchedulingPodGroupV1alpha3,
             DeliverGang<gang::SchedulingPodGroup, gang::DecodeSchedulingPodGroup, gang::GangKind::kSchedulingPodGroup>,
             RemoveGang<gang::GangKind::kSchedulingPodGroup>},
    ReadKind{"PodGroup", gang::kSchedulingPodGroupApiVersion,
             DeliverGang<gang::SchedulingPodGroup, gang::DecodeSchedulingPodGroup, gang::GangKind::kSchedulingPodGroup>,
             RemoveGang<gang::GangKind::kSchedulingPodGroup>},
    ReadKind{"Workload", gang::kWorkloadApiVersion, DeliverGang<gang::Workload, gang::DecodeWorkload, gang::GangKind::kWorkload>,
             RemoveGang<gang::GangKind::kWorkload>},
    ReadKind{"Job", "batch/", DeliverGang<gang::JobInfo, gang::DecodeJob, gang::GangKind::kJob>, RemoveGang<gang::GangKind::kJob>},
    ReadKind{std::string_view(kQueueKind), "tessel.io/", DeliverQueue, RemoveQueue},
    ReadKind{std::string_view(kResourceFlavorKind), "tessel.io/", DeliverResourceFlavor, RemoveResourceFlavor},
    ReadKind{std::string_view(kCohortKind), "tessel.io/", DeliverCohort, RemoveCohort},
};

const ReadKind* Find(std::string_view api_version, std::string_view kind) {
  for (const ReadKind& k : kReadKinds) {
    if (k.Matches(api_version, kind)) return &k;
  }
  return nullptr;
}

std::string_view StringField(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? std::string_view(it->get_ref<const std::string&>()) : std::string_view();
}

}  // namespace

bool IsReadKind(std::string_view api_version, std::string_view kind) { return Find(api_version, kind) != nullptr; }

absl::StatusOr<bool> DeliverObject(Scheduler& scheduler, const json& object) {
  const ReadKind* k = Find(StringField(object, "apiVersion"), StringField(object, "kind"));
  if (k == nullptr) return false;
  if (absl::Status st = k->deliver(scheduler, object); !st.ok()) return st;
  return true;
}

bool DeliverDelete(Scheduler& scheduler, std::string_view api_version, std::string_view kind, std::string_view key) {
  const ReadKind* k = Find(api_version, kind);
  if (k == nullptr) return false;
  k->remove(scheduler, key);
  return true;
}

}  // namespace tessel
