// tesselctl: a command-line client of a running tessel-scheduler for users of kubectl. It reads
// the kubeconfig (the user's own credentials: token, client certificate or exec plugin) and
// calls the admin API through the API server, as the aggregated API admin.tessel.io/v1alpha1
// (the API server authenticates the user and forwards the call to the leading scheduler,
// which authorizes it per call). With --server HOST:PORT or --grpc it calls the leader's gRPC
// admin API (proto/tessel/v1/admin.proto) directly instead, with the user's bearer token.
// Output is a table, or -o json|yaml.
//
//   tesselctl queues
//   tesselctl pending [--queue Q] [-n NS]
//   tesselctl explain NS/POD
//   tesselctl simulate SNAPSHOT.json
//   tesselctl snapshot -o FILE [--anonymize]
#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <google/protobuf/util/json_util.h>
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>

#include "absl/strings/ascii.h"
#include "nlohmann/json.hpp"
#include "scheduler/cmd/flags.h"
#include "scheduler/cmd/version.h"
#include "scheduler/kube/client.h"
#include "scheduler/kube/informer.h"
#include "scheduler/kube/kubeconfig.h"
#include "scheduler/server/aggregated_api.h"
#include "scheduler/server/metrics.h"
#include "scheduler/util/file.h"
#include "scheduler/util/status_macros.h"
#include "scheduler/util/strings.h"
#include "tessel/v1/admin.grpc.pb.h"
#include "tools/tesselctl/leader.h"
#include "tools/tesselctl/snapshot.h"

namespace tessel::ctl {
namespace {

using nlohmann::json;

constexpr std::string_view kCommands = R"(usage: tesselctl [flags] COMMAND [args]

Commands:
  queues                         every team Queue: pending and admitted pods, GPU usage,
                                 borrowing, lending, weighted share, the oldest wait
  pending [--queue Q] [-n NS]    pending pods in the order the scheduler takes them
  explain NS/POD                 why a pod waits: per-node reasons and the nearest miss
  simulate FILE                  replay a snapshot (a v1 List) under the live configuration;
                                 prints what tessel-bench replay prints
  snapshot -o FILE [--anonymize] write the cluster as replay reads it (no scheduler needed)
  version                        print tesselctl's version

Flags:)";

struct Flags {
  std::string kubeconfig, context, server, ca;
  std::string lease_namespace = "kube-system", lease_name = "tessel-scheduler";
  bool insecure_skip_verify = false, plaintext = false, anonymize = false, version = false, grpc = false;
  std::string output = "table";  // snapshot: the file (-o FILE)
  std::string queue, namespace_;
  std::vector<std::string> args;  // command and positional arguments
};

// Parses the command line (flags and the command mix: `tesselctl pending -n NS`), or exits with
// the usage.
Flags ParseFlags(int argc, char** argv) {
  Flags f;
  cmd::FlagSet flags("tesselctl", std::string(kCommands));
  flags.String("--kubeconfig", "FILE", &f.kubeconfig, "(default: $KUBECONFIG, else ~/.kube/config)")
      .String("--context", "NAME", &f.context, "kubeconfig context (default: its current-context)")
      .String("--server", "HOST:PORT", &f.server,
              "call the gRPC admin API at HOST:PORT (default: through the API server)")
      .Bool("--grpc", &f.grpc, "call the leader's gRPC admin API, found through its Lease, not the API server")
      .String("--lease-namespace", "NS", &f.lease_namespace, "--grpc: namespace of the scheduler's Lease (default kube-system)")
      .String("--lease-name", "NAME", &f.lease_name, "--grpc: name of the Lease (default tessel-scheduler)")
      .String("--ca", "FILE", &f.ca, "--grpc/--server: CA that signed the scheduler's serving certificate")
      .Bool("--insecure-skip-tls-verify", &f.insecure_skip_verify, "--grpc/--server: do not verify the scheduler's certificate")
      .Bool("--plaintext", &f.plaintext, "--grpc/--server: no TLS (a scheduler run with --admin-insecure; local use only)")
      .String({"-o", "--output"}, "table|json|yaml", &f.output, "output format (default table); snapshot: the file")
      .String("--queue", "Q", &f.queue, "pending: only this Queue's pods")
      .String({"-n", "--namespace"}, "NS", &f.namespace_, "pending: only this namespace; explain: the pod's")
      .Bool("--anonymize", &f.anonymize, "snapshot: rename namespaces, pods and nodes (ns-1, pod-1, node-1)")
      .Bool("--version", &f.version, "print tesselctl's version and exit (as the version command)")
      .Positional(&f.args);
  cmd::ParseOrExit(flags, argc, argv);
  if (f.version) {
    std::cout << "tesselctl " << cmd::Version() << "\n";
    std::exit(0);
  }
  auto fail = [&flags](std::string_view message) {
    std::cerr << "tesselctl: " << message << "\n\n" << flags.Usage();
    std::exit(2);
  };
  if (f.args.empty()) fail("no command given");
  if (f.args[0] != "snapshot" && f.output != "table" && f.output != "json" && f.output != "yaml") {
    fail(StrCat("-o: \"", f.output, "\" is not table, json or yaml"));
  }
  return f;
}

absl::StatusOr<kube::ClientConfig> KubeConfig(const Flags& f) {
  std::string path = f.kubeconfig;
  if (path.empty()) {
    if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') path = env;
  }
  if (path.empty()) {
    const char* home = std::getenv("HOME");
    path = StrCat(home != nullptr ? home : "", "/.kube/config");
  }
  return kube::LoadKubeconfig(path, f.context);
}

// The token sent as plain metadata: only with --plaintext (insecure channels refuse call
// credentials); otherwise BearerToken attaches it.
std::string plaintext_token_;

// Attaches the user's bearer token to every call.
class BearerToken final : public grpc::MetadataCredentialsPlugin {
 public:
  explicit BearerToken(std::string token) : token_(std::move(token)) {}
  grpc::Status GetMetadata(grpc::string_ref, grpc::string_ref, const grpc::AuthContext&,
                           std::multimap<grpc::string, grpc::string>* metadata) override {
    metadata->insert({"authorization", "Bearer " + token_});
    return grpc::Status::OK;
  }

 private:
  std::string token_;
};

absl::StatusOr<std::unique_ptr<tessel::v1::Admin::Stub>> Connect(const Flags& f,
                                                                const kube::ClientConfig& config,
                                                                kube::KubeClient& client) {
  std::string endpoint = f.server;
  if (endpoint.empty()) {
    ASSIGN_OR_RETURN(endpoint, FindLeaderEndpoint(client, f.lease_namespace, f.lease_name));
  }
  std::string token = config.token;
  if (config.exec.has_value()) {
    ASSIGN_OR_RETURN(kube::ExecCredential cred, kube::ExecCredentialSource(*config.exec).Get());
    token = cred.token;
  } else if (!config.token_file.empty()) {
    absl::StatusOr<std::string> t = ReadFileToString(config.token_file);
    if (!t.ok()) return t.status();
    token = std::string(absl::StripAsciiWhitespace(*t));
  }
  if (token.empty()) {
    return absl::InvalidArgumentError(
        "the kubeconfig's user has no bearer token: the gRPC admin API authenticates callers with "
        "their token (a client certificate alone is not forwarded); without --grpc/--server, "
        "tesselctl goes through the API server, which takes any kubeconfig credential");
  }
  std::shared_ptr<grpc::ChannelCredentials> channel;
  if (f.plaintext) {
    channel = grpc::InsecureChannelCredentials();
  } else if (f.insecure_skip_verify) {
    grpc::experimental::TlsChannelCredentialsOptions options;
    options.set_verify_server_certs(false);
    options.set_check_call_host(false);
    options.set_certificate_verifier(std::make_shared<grpc::experimental::NoOpCertificateVerifier>());
    channel = grpc::experimental::TlsCredentials(options);
  } else {
    grpc::SslCredentialsOptions ssl;
    if (!f.ca.empty()) {
      ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadFileToString(f.ca));
    } else {
      ssl.pem_root_certs = config.ca_pem;
    }
    channel = grpc::SslCredentials(ssl);
  }
  // Tokens never travel in clear text unless the user asked for --plaintext.
  auto creds = f.plaintext
                   ? channel
                   : grpc::CompositeChannelCredentials(
                         channel, grpc::MetadataCredentialsFromPlugin(std::make_unique<BearerToken>(token)));
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  std::shared_ptr<grpc::Channel> ch = grpc::CreateCustomChannel(endpoint, creds, args);
  auto stub = tessel::v1::Admin::NewStub(ch);
  if (f.plaintext) {
    // Insecure channels refuse call credentials: the token goes as plain metadata.
    plaintext_token_ = token;
  }
  return stub;
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  if (!plaintext_token_.empty()) ctx->AddMetadata("authorization", "Bearer " + plaintext_token_);
  return ctx;
}

absl::Status FromGrpc(const grpc::Status& st, std::string_view call) {
  if (st.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                      StrCat(call, ": ", st.error_message()));
}

// The admin calls, whichever way they travel.
class AdminCalls {
 public:
  virtual ~AdminCalls() = default;
  virtual absl::Status ListQueues(tessel::v1::ListQueuesResponse* out) = 0;
  virtual absl::Status ListPending(const tessel::v1::ListPendingRequest& in, tessel::v1::ListPendingResponse* out) = 0;
  virtual absl::Status Explain(const tessel::v1::ExplainRequest& in, tessel::v1::ExplainResponse* out) = 0;
  virtual absl::Status Simulate(const tessel::v1::SimulateRequest& in, tessel::v1::SimulateResponse* out) = 0;
};

// Over gRPC, straight to the leader.
class GrpcCalls final : public AdminCalls {
 public:
  explicit GrpcCalls(std::unique_ptr<tessel::v1::Admin::Stub> stub) : stub_(std::move(stub)) {}
  absl::Status ListQueues(tessel::v1::ListQueuesResponse* out) override {
    return FromGrpc(stub_->ListQueues(Context().get(), {}, out), "queues");
  }
  absl::Status ListPending(const tessel::v1::ListPendingRequest& in, tessel::v1::ListPendingResponse* out) override {
    return FromGrpc(stub_->ListPending(Context().get(), in, out), "pending");
  }
  absl::Status Explain(const tessel::v1::ExplainRequest& in, tessel::v1::ExplainResponse* out) override {
    return FromGrpc(stub_->Explain(Context().get(), in, out), "explain");
  }
  absl::Status Simulate(const tessel::v1::SimulateRequest& in, tessel::v1::SimulateResponse* out) override {
    auto ctx = Context();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
    return FromGrpc(stub_->Simulate(ctx.get(), in, out), "simulate");
  }

 private:
  std::unique_ptr<tessel::v1::Admin::Stub> stub_;
};

// Through the API server: the aggregated API admin.tessel.io/v1alpha1, with the kubeconfig's
// own credentials and CA. Its answers are the same messages, as JSON.
class ApiServerCalls final : public AdminCalls {
 public:
  explicit ApiServerCalls(kube::KubeClient& client) : client_(client) {}
  absl::Status ListQueues(tessel::v1::ListQueuesResponse* out) override {
    return Call("queues", {.path = "/queues"}, out);
  }
  absl::Status ListPending(const tessel::v1::ListPendingRequest& in, tessel::v1::ListPendingResponse* out) override {
    std::string path = in.namespace_().empty() ? "/pending" : StrCat("/namespaces/", in.namespace_(), "/pending");
    if (!in.queue().empty()) path += StrCat("?queue=", kube::UrlEncode(in.queue()));
    return Call("pending", {.path = path}, out);
  }
  absl::Status Explain(const tessel::v1::ExplainRequest& in, tessel::v1::ExplainResponse* out) override {
    const size_t slash = in.pod().find('/');
    return Call("explain",
                {.path = StrCat("/namespaces/", in.pod().substr(0, slash), "/explanations/", in.pod().substr(slash + 1))},
                out);
  }
  absl::Status Simulate(const tessel::v1::SimulateRequest& in, tessel::v1::SimulateResponse* out) override {
    ASSIGN_OR_RETURN(std::string body, Send("simulate", {.method = "POST", .path = "/simulations", .body = in.snapshot(),
                                                         .timeout = absl::Minutes(10), .retry = false}));
    out->set_result_json(std::move(body));
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<std::string> Send(std::string_view call, kube::Request request) {
    request.path = StrCat("/apis/admin.tessel.io/v1alpha1", request.path);
    ASSIGN_OR_RETURN(kube::Response r, client_.Do(request));
    if (r.code == 404 || r.code == 503) {
      return absl::UnavailableError(StrCat(
          call, ": ", r.ErrorMessage(), " (HTTP ", r.code, "): the API server has no working admin.tessel.io: ",
          "see `kubectl get apiservice ", server::kAdminApiServiceName,
          "` (manifests/admin-api.yaml installs it; a leading scheduler serves it)"));
    }
    if (!r.ok()) return r.ToStatus(call);
    return std::move(r.body);
  }
  absl::Status Call(std::string_view call, kube::Request request, google::protobuf::Message* out) {
    ASSIGN_OR_RETURN(std::string body, Send(call, std::move(request)));
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;  // apiVersion and kind
    if (!google::protobuf::util::JsonStringToMessage(body, out, options).ok()) {
      return absl::DataLossError(StrCat(call, ": the answer is not a ", out->GetTypeName()));
    }
    return absl::OkStatus();
  }

  kube::KubeClient& client_;
};

YAML::Node ToYaml(const json& j) {
  YAML::Node n;
  if (j.is_object()) {
    n = YAML::Node(YAML::NodeType::Map);
    for (const auto& [k, v] : j.items()) n[k] = ToYaml(v);
  } else if (j.is_array()) {
    n = YAML::Node(YAML::NodeType::Sequence);
    for (const json& v : j) n.push_back(ToYaml(v));
  } else if (j.is_string()) {
    n = j.get<std::string>();
  } else if (j.is_null()) {
    n = YAML::Node(YAML::NodeType::Null);
  } else {
    n = YAML::Load(j.dump());
  }
  return n;
}

// -o json|yaml of a response; false when the format is table.
bool PrintStructured(const google::protobuf::Message& m, const std::string& format) {
  if (format == "table") return false;
  std::string text;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = false;
  (void)google::protobuf::util::MessageToJsonString(m, &text, options);
  const json j = json::parse(text, nullptr, false);
  if (format == "json") {
    std::cout << j.dump(2) << "\n";
  } else {
    YAML::Emitter out;
    out << ToYaml(j);
    std::cout << out.c_str() << "\n";
  }
  return true;
}

// Columns padded to their widest cell.
void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 3, ' ');
    }
    std::cout << line << "\n";
  }
}

std::string Wait(int64_t seconds) {
  if (seconds < 0) return "-";
  if (seconds < 120) return StrCat(seconds, "s");
  if (seconds < 7200) return StrCat(seconds / 60, "m", seconds % 60 ? StrCat(seconds % 60, "s") : "");
  return StrCat(seconds / 3600, "h", (seconds % 3600) / 60, "m");
}

std::string Gpu(const google::protobuf::Map<std::string, std::string>& m) {
  auto it = m.find("nvidia.com/gpu");
  return it == m.end() ? "0" : it->second;
}

absl::Status Queues(AdminCalls& calls, const Flags& f) {
  tessel::v1::ListQueuesResponse r;
  RETURN_IF_ERROR(calls.ListQueues(&r));
  if (PrintStructured(r, f.output)) return absl::OkStatus();
  std::vector<std::vector<std::string>> rows = {{"QUEUE", "COHORT", "PENDING", "ADMITTED", "GPU NOMINAL",
                                                 "GPU USAGE", "BORROWED", "LENT", "SHARE", "OLDEST WAIT"}};
  for (const auto& q : r.queues()) {
    rows.push_back({q.name(), q.cohort().empty() ? "-" : q.cohort(), StrCat(q.pending_pods()),
                    StrCat(q.admitted_pods()), Gpu(q.nominal()), Gpu(q.usage()), Gpu(q.borrowed()),
                    Gpu(q.lent()), fmt::format("{}.{:03d}", q.weighted_share_milli() / 1000,
                                               q.weighted_share_milli() % 1000),
                    Wait(q.oldest_pending_wait_seconds())});
  }
  PrintTable(rows);
  if (r.cohorts().empty()) return absl::OkStatus();
  // The cohort tree: each cohort, then what hangs below it, indented by depth.
  std::map<std::string, std::vector<const tessel::v1::CohortInfo*>> child_cohorts;
  std::map<std::string, std::vector<const tessel::v1::QueueInfo*>> child_queues;
  for (const auto& c : r.cohorts()) child_cohorts[c.parent()].push_back(&c);
  for (const auto& q : r.queues()) child_queues[q.cohort()].push_back(&q);
  std::vector<std::vector<std::string>> tree = {{"TREE", "GPU QUOTA", "GPU USAGE", "BORROWED", "SHARE", "PROBLEM"}};
  auto share = [](int64_t milli) { return fmt::format("{}.{:03d}", milli / 1000, milli % 1000); };
  std::function<void(const tessel::v1::CohortInfo&, int)> walk = [&](const tessel::v1::CohortInfo& c, int depth) {
    tree.push_back({StrCat(std::string(2 * depth, ' '), c.name(), c.defined() ? "" : " (name only)"),
                    Gpu(c.subtree_quota()), Gpu(c.usage()), Gpu(c.borrowed()), share(c.weighted_share_milli()),
                    c.problem().empty() ? "-" : c.problem()});
    for (const tessel::v1::CohortInfo* k : child_cohorts[c.name()]) walk(*k, depth + 1);
    for (const tessel::v1::QueueInfo* q : child_queues[c.name()]) {
      tree.push_back({StrCat(std::string(2 * depth + 2, ' '), "queue ", q->name()), Gpu(q->nominal()),
                      Gpu(q->usage()), Gpu(q->borrowed()), share(q->weighted_share_milli()), "-"});
    }
  };
  for (const tessel::v1::CohortInfo* root : child_cohorts[""]) walk(*root, 0);
  std::cout << "\n";
  PrintTable(tree);
  return absl::OkStatus();
}

absl::Status Pending(AdminCalls& calls, const Flags& f) {
  tessel::v1::ListPendingRequest req;
  req.set_queue(f.queue);
  req.set_namespace_(f.namespace_);
  tessel::v1::ListPendingResponse r;
  RETURN_IF_ERROR(calls.ListPending(req, &r));
  if (PrintStructured(r, f.output)) return absl::OkStatus();
  std::vector<std::vector<std::string>> rows = {
      {"POSITION", "IN QUEUE", "POD", "QUEUE", "PRIORITY", "WAIT", "STATE", "GANG"}};
  for (const auto& p : r.pods()) {
    rows.push_back({StrCat(p.position()), StrCat(p.queue_position()), p.pod(),
                    p.queue().empty() ? "-" : p.queue(), StrCat(p.priority()), Wait(p.wait_seconds()),
                    p.state(), p.gang().empty() ? "-" : p.gang()});
  }
  PrintTable(rows);
  return absl::OkStatus();
}

absl::Status Explain(AdminCalls& calls, const Flags& f) {
  if (f.args.size() != 2) return absl::InvalidArgumentError("explain takes one pod: NS/NAME (or NAME with -n NS)");
  tessel::v1::ExplainRequest req;
  std::string pod = f.args[1];
  if (pod.find('/') == std::string::npos) pod = StrCat(f.namespace_.empty() ? "default" : f.namespace_, "/", pod);
  req.set_pod(pod);
  tessel::v1::ExplainResponse r;
  RETURN_IF_ERROR(calls.Explain(req, &r));
  if (PrintStructured(r, f.output)) return absl::OkStatus();
  std::cout << "Pod:     " << r.pod() << " (" << r.state() << (r.node().empty() ? "" : " on " + r.node())
            << (r.queue().empty() ? "" : ", queue " + r.queue()) << ")\n";
  if (!r.message().empty()) std::cout << "Message: " << r.message() << "\n";
  if (r.reasons_size() > 0) {
    std::cout << "Nodes:\n";
    for (const auto& g : r.reasons()) {
      std::vector<std::string> nodes(g.nodes().begin(), g.nodes().end());
      if (nodes.size() > 5) {
        nodes.resize(5);
        nodes.push_back("...");
      }
      std::cout << "  " << g.count() << " " << g.reason() << " (" << StrJoin(nodes, ", ") << ")\n";
    }
  }
  std::cout << "Nearest miss (" << r.nearest_kind() << "): " << r.nearest_miss() << "\n";
  for (const std::string& d : r.details()) std::cout << "  - " << d << "\n";
  return absl::OkStatus();
}

absl::Status Simulate(AdminCalls& calls, const Flags& f) {
  if (f.args.size() != 2) return absl::InvalidArgumentError("simulate takes one snapshot file");
  tessel::v1::SimulateRequest req;
  ASSIGN_OR_RETURN(*req.mutable_snapshot(), ReadFileToString(f.args[1]));
  tessel::v1::SimulateResponse r;
  RETURN_IF_ERROR(calls.Simulate(req, &r));
  const json result = json::parse(r.result_json(), nullptr, false);
  if (f.output == "yaml") {
    YAML::Emitter out;
    out << ToYaml(result);
    std::cout << out.c_str() << "\n";
  } else {
    std::cout << result.dump(2) << "\n";  // the replay JSON, as tessel-bench prints it
  }
  return absl::OkStatus();
}

absl::Status Snapshot(kube::KubeClient& client, const Flags& f) {
  if (f.output.empty() || f.output == "table") {
    return absl::InvalidArgumentError("snapshot needs -o FILE");
  }
  ASSIGN_OR_RETURN(json list, TakeSnapshot(client));
  if (f.anonymize) Anonymize(list);
  std::ofstream out(f.output);
  out << list.dump(1) << "\n";
  if (!out.good()) return absl::InternalError(StrCat(f.output, ": cannot write"));
  std::cerr << "wrote " << list["items"].size() << " objects to " << f.output << "\n";
  return absl::OkStatus();
}

absl::Status Run(const Flags& f) {
  const std::string& command = f.args[0];
  if (command == "version") {
    std::cout << "tesselctl " << cmd::Version() << "\n";
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(kube::ClientConfig config, KubeConfig(f));
  ASSIGN_OR_RETURN(std::unique_ptr<kube::KubeClient> client,
                   kube::KubeClient::New(config, {.max_attempts = 2, .user_agent = "tesselctl"}));
  if (command == "snapshot") return Snapshot(*client, f);
  if (command != "queues" && command != "pending" && command != "explain" && command != "simulate") {
    return absl::InvalidArgumentError(StrCat("unknown command \"", command, "\""));
  }
  std::unique_ptr<AdminCalls> calls;
  if (f.grpc || !f.server.empty()) {
    ASSIGN_OR_RETURN(std::unique_ptr<tessel::v1::Admin::Stub> stub, Connect(f, config, *client));
    calls = std::make_unique<GrpcCalls>(std::move(stub));
  } else {
    calls = std::make_unique<ApiServerCalls>(*client);
  }
  if (command == "queues") return Queues(*calls, f);
  if (command == "pending") return Pending(*calls, f);
  if (command == "explain") return Explain(*calls, f);
  return Simulate(*calls, f);
}

}  // namespace
}  // namespace tessel::ctl

int main(int argc, char** argv) {
  const tessel::ctl::Flags flags = tessel::ctl::ParseFlags(argc - 1, argv + 1);
  grpc_init();
  const absl::Status st = tessel::ctl::Run(flags);
  grpc_shutdown_blocking();
  if (!st.ok()) std::cerr << "tesselctl: " << st.message() << "\n";
  // The process ends here without exit()'s handlers. gRPC's thread pool outlives
  // grpc_shutdown_blocking when a reference is still held on one of its threads, and those
  // threads were still exiting while exit() ran OpenSSL's clean-up (libcurl's and gRPC's
  // libcrypto): "double free or corruption" or a segmentation fault after the output was
  // written, about once in 400 calls that found the leader through the Lease (a core dump showed
  // OPENSSL_cleanup in the main thread beside a gRPC thread freeing its cache). A command-line
  // tool has nothing to release at exit but its output, flushed first.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(st.ok() ? 0 : 1);
}
