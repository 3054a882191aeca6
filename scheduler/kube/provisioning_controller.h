// The live side of ProvisioningRequests (docs/provisioning.md): what the core decides through
// provisioning::Provisioner is written here, on a worker thread of its own, and the requests'
// conditions come back through an optional informer on autoscaling.x-k8s.io/v1
// provisioningrequests (absent CRD: nothing is watched, and a gang's ask fails with the API's
// answer, reported on the gang).
//
// For a gang the core reports short of capacity it
//   1. reads the pending members (GET each pod) and groups them by shape (TemplateSpecOf),
//   2. creates one PodTemplate per shape and the ProvisioningRequest naming them (409 counts as
//      done: a retry after a lost answer, or a replica that created them before),
//   3. annotates the members with cluster-autoscaler's consume-provisioning-request and
//      provisioning-class-name, so that CA leaves them out of its ordinary scale-up (members
//      that appear later get them at the gang's next shortfall),
// and deletes a gang's requests and their templates once it is placed or deleted. Writes are
// fenced like every other write (`write_budget`). A request's change wakes the waiting gangs
// (`on_change`).
//
//   ProvisioningController prov(clients.status.get(), clients.informers.get(),
//                               {.write_budget = budget, .on_change = [&] { sched.OnCustomObjectChange(); }});
//   SchedulerParams{..., .provisioner = &prov};
//   prov.Start();  ...  prov.Stop();
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/kube/client.h"
#include "scheduler/kube/informer.h"
#include "scheduler/kube/work_queue.h"
#include "scheduler/provisioning/provisioner.h"

namespace tessel::kube {

inline constexpr std::string_view kProvisioningRequestsPath = "/apis/autoscaling.x-k8s.io/v1/provisioningrequests";

struct ProvisioningOptions {
  std::function<std::optional<absl::Duration>()> write_budget;  // see Request::write_budget
  provisioning::RequestBookOptions book;
  std::function<void()> on_change;  // a request changed: gangs waiting on one may go on
  std::function<absl::Time()> now = [] { return absl::Now(); };
};

class ProvisioningController final : public provisioning::Provisioner, public InformerHandler {
 public:
  // `writes` sends the creates, patches and deletes; `reads` the informer's list and watch.
  ProvisioningController(KubeClient* writes, KubeClient* reads, ProvisioningOptions options);
  ~ProvisioningController() override;

  void Start();
  void Stop();
  bool HasSynced() const { return informer_.HasSynced(); }

  // provisioning::Provisioner (scheduling thread).
  provisioning::Outcome GangShort(const provisioning::GangShortage& shortage) override;
  void GangPlaced(const std::string& gang_key) override;
  void GangGone(const std::string& gang_key) override;

  // InformerHandler (the informer's thread).
  void OnAdd(const nlohmann::json& object) override;
  void OnUpdate(const nlohmann::json& object) override { OnAdd(object); }
  void OnDelete(const std::string& key, const nlohmann::json* last) override;

  int64_t created() const { return created_.load(); }
  int64_t deleted() const { return deleted_.load(); }

 private:
  // Worker thread: the writes of one step.
  void Create(const provisioning::RequestSpec& spec, const std::vector<std::string>& member_keys);
  // Marks the pods as the request's consumers (cluster-autoscaler's annotations).
  void Annotate(const provisioning::Consume& consume);
  void Delete(const provisioning::RequestRef& request);
  void DeleteAll(std::vector<provisioning::RequestRef> requests);
  absl::StatusOr<Response> Send(std::string method, std::string path, const nlohmann::json* body,
                                std::string content_type = std::string(kJson));

  KubeClient* writes_;
  KubeClient* reads_;
  const ProvisioningOptions options_;
  provisioning::RequestBook book_;
  WorkerPool worker_;
  Informer informer_;
  std::atomic<int64_t> created_{0}, deleted_{0};
};

}  // namespace tessel::kube
