// Creates and deletes ProvisioningRequests and their PodTemplates for the core's gangs, and
// feeds the requests' conditions back (provisioning_controller.h).
#include "scheduler/kube/provisioning_controller.h"

#include <spdlog/spdlog.h>

#include "scheduler/util/strings.h"

namespace tessel::kube {
namespace {

using nlohmann::json;
namespace prov = provisioning;

inline constexpr std::string_view kRequestAnnotation = "tessel.io/provisioning-request";

std::string NamespacePath(std::string_view api, std::string_view ns, std::string_view resource) {
  return StrCat(api, "/namespaces/", ns, "/", resource);
}
std::string RequestsPath(std::string_view ns) {
  return NamespacePath("/apis/autoscaling.x-k8s.io/v1", ns, "provisioningrequests");
}
std::string TemplatesPath(std::string_view ns) { return NamespacePath("/api/v1", ns, "podtemplates"); }

}  // namespace

ProvisioningController::ProvisioningController(KubeClient* writes, KubeClient* reads, ProvisioningOptions options)
    : writes_(writes),
      reads_(reads),
      options_(std::move(options)),
      book_(options_.book),
      worker_("provisioning", 1),
      informer_(reads, {.name = "provisioningrequests", .path = std::string(kProvisioningRequestsPath), .optional = true},
                this) {}

ProvisioningController::~ProvisioningController() { Stop(); }

void ProvisioningController::Start() { informer_.Start(); }

void ProvisioningController::Stop() {
  informer_.Stop();
  worker_.Shutdown();
}

prov::Outcome ProvisioningController::GangShort(const prov::GangShortage& shortage) {
  prov::Step step = book_.Shortfall(shortage.ask, shortage.member_keys, options_.now());
  if (!step.remove.empty()) {
    worker_.Submit([this, remove = step.remove] { DeleteAll(remove); });
  }
  if (step.kind == prov::Step::Kind::kCreate) {
    worker_.Submit([this, spec = step.create, members = shortage.member_keys] { Create(spec, members); });
  }
  if (!step.consume.pods.empty()) {
    worker_.Submit([this, consume = std::move(step.consume)] { Annotate(consume); });
  }
  return {.failed = step.kind == prov::Step::Kind::kFailed, .message = std::move(step.message)};
}

void ProvisioningController::GangPlaced(const std::string& gang_key) {
  std::vector<prov::RequestRef> requests = book_.Release(gang_key);
  if (requests.empty()) return;
  worker_.Submit([this, requests = std::move(requests)] {
    DeleteAll(requests);
    // A slot closed: gangs held back by the cap may ask now.
    if (book_.AnyCapped() && options_.on_change) options_.on_change();
  });
}

void ProvisioningController::GangGone(const std::string& gang_key) { GangPlaced(gang_key); }

void ProvisioningController::OnAdd(const json& object) {
  absl::StatusOr<prov::ObservedRequest> r = prov::DecodeRequest(object);
  if (!r.ok()) {
    spdlog::warn("{}", r.status().message());
    return;
  }
  if (r->gang_key.empty()) return;
  const std::optional<prov::RequestPhase> before = book_.PhaseOf(r->gang_key);
  book_.Observe(*r, options_.now());
  if (book_.PhaseOf(r->gang_key) != before && options_.on_change) options_.on_change();
}

void ProvisioningController::OnDelete(const std::string& key, const json* /*last*/) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return;
  book_.Removed({key.substr(0, slash), key.substr(slash + 1)});
  if (book_.AnyCapped() && options_.on_change) options_.on_change();  // a slot may have closed
}

absl::StatusOr<Response> ProvisioningController::Send(std::string method, std::string path, const json* body,
                                                      std::string content_type) {
  Request request{.method = std::move(method),
                  .path = std::move(path),
                  .body = body ? body->dump() : std::string(),
                  .content_type = std::move(content_type),
                  .write_budget = options_.write_budget};
  return writes_->Do(request);
}

void ProvisioningController::Create(const prov::RequestSpec& spec, const std::vector<std::string>& member_keys) {
  const prov::RequestRef ref{spec.namespace_, spec.name};
  auto fail = [&](const absl::Status& st) {
    spdlog::warn("ProvisioningRequest {}/{}: {}", spec.namespace_, spec.name, st.message());
    book_.CreateFailed(spec.gang_key, ref, std::string(st.message()), options_.now());
    if (options_.on_change) options_.on_change();
  };
  // 1. The members as the API server has them (their full specs: selectors, affinity).
  std::vector<json> pods;
  for (const std::string& key : member_keys) {
    const size_t slash = key.find('/');
    absl::StatusOr<Response> r =
        reads_->Do({.path = StrCat("/api/v1/namespaces/", key.substr(0, slash), "/pods/", key.substr(slash + 1))});
    if (!r.ok()) return fail(r.status());
    if (r->code == 404) continue;  // gone meanwhile
    if (!r->ok()) return fail(r->ToStatus(StrCat("read pod ", key)));
    json pod = json::parse(r->body, nullptr, /*allow_exceptions=*/false);
    if (!pod.is_object()) return fail(absl::InternalError(StrCat("pod ", key, ": the answer is not an object")));
    pods.push_back(std::move(pod));
  }
  if (pods.empty()) return fail(absl::NotFoundError("no member left to provision for"));
  // 2. The templates, then the request that names them.
  const std::vector<prov::PodSetTemplate> sets = prov::PodSets(pods, spec.nodes);
  for (size_t i = 0; i < sets.size(); ++i) {
    json tmpl = prov::PodTemplateObject(spec, i, sets[i]);
    tmpl["metadata"]["annotations"][std::string(kRequestAnnotation)] = spec.name;
    absl::StatusOr<Response> r = Send("POST", TemplatesPath(spec.namespace_), &tmpl);
    if (!r.ok()) return fail(r.status());
    if (!r->ok() && r->code != 409) return fail(r->ToStatus(StrCat("create PodTemplate ", prov::TemplateName(spec.name, i))));
  }
  const json request = prov::RequestObject(spec, sets);
  absl::StatusOr<Response> r = Send("POST", RequestsPath(spec.namespace_), &request);
  if (!r.ok()) return fail(r.status());
  if (!r->ok() && r->code != 409) return fail(r->ToStatus(StrCat("create ProvisioningRequest ", spec.name)));
  created_.fetch_add(1);
  spdlog::info("ProvisioningRequest {}/{} created for {} ({} pod set(s), class {})", spec.namespace_, spec.name,
               spec.gang_key, sets.size(), spec.marking.class_name);
  // 3. The members consume it: cluster-autoscaler leaves them out of its own scale-up.
  prov::Consume consume{.request = spec.name, .class_name = spec.marking.class_name};
  for (const json& pod : pods) {
    const json meta = pod.contains("metadata") ? pod["metadata"] : json::object();
    consume.pods.push_back(StrCat(JsonString(meta, "namespace"), "/", JsonString(meta, "name")));
  }
  Annotate(consume);
}

void ProvisioningController::Annotate(const prov::Consume& consume) {
  const json patch = {{"metadata",
                       {{"annotations",
                         {{prov::kConsumeAnnotation, consume.request}, {prov::kPodClassAnnotation, consume.class_name}}}}}};
  for (const std::string& key : consume.pods) {
    const size_t slash = key.find('/');
    absl::StatusOr<Response> p =
        Send("PATCH", StrCat("/api/v1/namespaces/", key.substr(0, slash), "/pods/", key.substr(slash + 1)), &patch,
             std::string(kMergePatch));
    if (!p.ok() || (!p->ok() && p->code != 404)) {
      spdlog::warn("annotate pod {} for ProvisioningRequest {}: {}", key, consume.request,
                   p.ok() ? p->ErrorMessage() : p.status().message());
    }
  }
}

void ProvisioningController::Delete(const prov::RequestRef& request) {
  absl::StatusOr<Response> r = Send("DELETE", StrCat(RequestsPath(request.namespace_), "/", request.name), nullptr);
  if (!r.ok() || (!r->ok() && r->code != 404)) {
    spdlog::warn("delete ProvisioningRequest {}/{}: {}", request.namespace_, request.name,
                 r.ok() ? r->ErrorMessage() : r.status().message());
  } else if (r->ok()) {
    deleted_.fetch_add(1);
  }
  // Its templates: Tessel's in the namespace that name it.
  absl::StatusOr<Response> list = reads_->Do(
      {.path = StrCat(TemplatesPath(request.namespace_), "?labelSelector=",
                      UrlEncode(StrCat(prov::kManagedByLabel, "=", prov::kManagedByValue)))});
  if (!list.ok() || !list->ok()) return;
  const json templates = json::parse(list->body, nullptr, false);
  if (!templates.is_object() || !templates.contains("items") || !templates["items"].is_array()) return;
  for (const json& t : templates["items"]) {
    const json meta = t.is_object() && t.contains("metadata") ? t["metadata"] : json::object();
    const json annotations = meta.is_object() && meta.contains("annotations") ? meta["annotations"] : json::object();
    if (JsonString(annotations, kRequestAnnotation) != request.name) continue;
    absl::StatusOr<Response> d =
        Send("DELETE", StrCat(TemplatesPath(request.namespace_), "/", JsonString(meta, "name")), nullptr);
    if (!d.ok() || (!d->ok() && d->code != 404)) {
      spdlog::warn("delete PodTemplate {}/{}: {}", request.namespace_, JsonString(meta, "name"),
                   d.ok() ? d->ErrorMessage() : d.status().message());
    }
  }
}

void ProvisioningController::DeleteAll(std::vector<prov::RequestRef> requests) {
  for (const prov::RequestRef& r : requests) Delete(r);
}

}  // namespace tessel::kube
