// The admin API behind the API server's aggregation layer (see aggregated_api.h).
#include "scheduler/server/aggregated_api.h"

#include <google/protobuf/util/json_util.h>
#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <cctype>

#include "absl/time/clock.h"
#include "scheduler/server/connection_guard.h"
#include "scheduler/util/strings.h"
#include "spdlog/spdlog.h"
#include "tessel/v1/admin.pb.h"

namespace tessel::server {

using nlohmann::json;

// The trusted client CAs of the front proxy. Outside the anonymous namespace: Handler, a class
// of the header's, holds one.
struct X509StoreFree {
  void operator()(X509_STORE* s) const { X509_STORE_free(s); }
};
using StorePtr = std::unique_ptr<X509_STORE, X509StoreFree>;

namespace {

const char* Reason(int code) {
  switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 413: return "RequestEntityTooLarge";
    case 429: return "TooManyRequests";
    case 503: return "ServiceUnavailable";
    default: return "InternalError";
  }
}

void WriteStatus(httplib::Response& res, int code, std::string_view message) {
  res.status = code;
  res.set_content(json{{"apiVersion", "v1"},
                       {"kind", "Status"},
                       {"status", "Failure"},
                       {"message", message},
                       {"reason", Reason(code)},
                       {"code", code}}
                      .dump(),
                  "application/json");
}

int HttpCode(const absl::Status& st) {
  switch (st.code()) {
    case absl::StatusCode::kInvalidArgument: return 400;
    case absl::StatusCode::kUnauthenticated: return 401;
    case absl::StatusCode::kPermissionDenied: return 403;
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kResourceExhausted: return 429;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded: return 503;
    default: return 500;
  }
}

// A protobuf message as the JSON tesselctl -o json prints, with its Kubernetes kind.
json ToJson(const google::protobuf::Message& m, std::string_view kind) {
  std::string text;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &text, options);
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) j = json::object();
  j["apiVersion"] = StrCat(kAdminApiGroup, "/", kAdminApiVersion);
  j["kind"] = kind;
  return j;
}

absl::StatusOr<StorePtr> StoreFromPem(const std::string& pem) {
  StorePtr store(X509_STORE_new());
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    if (X509_STORE_add_cert(store.get(), cert) == 1) ++added;
    X509_free(cert);
  }
  BIO_free(bio);
  if (added == 0) {
    return absl::InvalidArgumentError(StrCat(kRequestHeaderConfigMap, ": data.requestheader-client-ca-file: no PEM certificate"));
  }
  return store;
}

}  // namespace

// The routes, the front proxy's check and the trust it checks against.
class AggregatedApiServer::Handler {
 public:
  Handler(const AggregatedApiOptions& options, AdminBackend* backend, UserAuthorizer* authorizer)
      : options_(options), backend_(backend), authorizer_(authorizer) {}

  absl::Status SetTrust(const RequestHeaderConfig& config) {
    absl::StatusOr<StorePtr> store = StoreFromPem(config.client_ca_pem);
    if (!store.ok()) return store.status();
    auto trust = std::make_shared<Trust>(Trust{config, *std::move(store)});
    absl::MutexLock lock(&mu_);
    trust_ = std::move(trust);
    return absl::OkStatus();
  }

  void Route(httplib::Server& server) {
    const std::string base = StrCat("/apis/", kAdminApiGroup, "/", kAdminApiVersion);
    std::string escaped;  // the base as a regular expression
    for (char c : base) {
      if (c == '.') escaped += '\\';
      escaped += c;
    }
    server.Get(StrCat("/apis/", kAdminApiGroup).c_str(), [this](const httplib::Request& req, httplib::Response& res) {
      Serve(req, res, [](const AccessCheck&) { return absl::StatusOr<json>(Group()); });
    });
    server.Get(escaped + "/?", [this](const httplib::Request& req, httplib::Response& res) {
      Serve(req, res, [](const AccessCheck&) { return absl::StatusOr<json>(Resources()); });
    });
    server.Get(escaped + "/queues", [this](const httplib::Request& req, httplib::Response& res) {
      Serve(req, res, [this](const AccessCheck& may) -> absl::StatusOr<json> {
        tessel::v1::ListQueuesResponse out;
        if (absl::Status st = AnswerListQueues(*backend_, may, &out); !st.ok()) return st;
        return ToJson(out, "QueueList");
      });
    });
    auto pending = [this](const httplib::Request& req, httplib::Response& res, std::string ns) {
      Serve(req, res, [this, &req, ns](const AccessCheck& may) -> absl::StatusOr<json> {
        tessel::v1::ListPendingRequest in;
        in.set_queue(req.get_param_value("queue"));
        in.set_namespace_(ns);
        tessel::v1::ListPendingResponse out;
        if (absl::Status st = AnswerListPending(*backend_, in, may, options_.admin_limits, &out); !st.ok()) return st;
        return ToJson(out, "PendingPodList");
      });
    };
    server.Get(escaped + "/pending", [pending](const httplib::Request& req, httplib::Response& res) {
      pending(req, res, "");
    });
    server.Get(escaped + "/namespaces/([^/]+)/pending", [pending](const httplib::Request& req, httplib::Response& res) {
      pending(req, res, req.matches[1]);
    });
    server.Get(escaped + "/namespaces/([^/]+)/explanations/([^/]+)",
               [this](const httplib::Request& req, httplib::Response& res) {
                 const std::string ns = req.matches[1], name = req.matches[2];
                 Serve(req, res, [this, ns, name](const AccessCheck& may) -> absl::StatusOr<json> {
                   tessel::v1::ExplainRequest in;
                   in.set_pod(StrCat(ns, "/", name));
                   tessel::v1::ExplainResponse out;
                   if (absl::Status st = AnswerExplain(*backend_, in, may, Control(), &out); !st.ok()) return st;
                   return ToJson(out, "Explanation");
                 });
               });
    server.Post(escaped + "/simulations", [this](const httplib::Request& req, httplib::Response& res) {
      Serve(req, res, [this, &req](const AccessCheck& may) -> absl::StatusOr<json> {
        absl::StatusOr<std::string> result =
            AnswerSimulate(*backend_, req.body, may, options_.admin_limits, Control());
        if (!result.ok()) return result.status();
        return json::parse(*result, nullptr, false);
      });
    });
    server.Get(escaped + "/leader", [this](const httplib::Request& req, httplib::Response& res) {
      // Only the pod's name, which the Lease shows too: the API server's check is enough.
      Serve(req, res, [this](const AccessCheck&) -> absl::StatusOr<json> {
        return json{{"apiVersion", StrCat(kAdminApiGroup, "/", kAdminApiVersion)},
                    {"kind", "Leader"},
                    {"identity", options_.identity}};
      });
    });
  }

 private:
  struct Trust {
    RequestHeaderConfig config;
    StorePtr store;
  };

  static json Group() {
    const std::string gv = StrCat(kAdminApiGroup, "/", kAdminApiVersion);
    const json version = {{"groupVersion", gv}, {"version", kAdminApiVersion}};
    return {{"apiVersion", "v1"}, {"kind", "APIGroup"}, {"name", kAdminApiGroup},
            {"versions", json::array({version})}, {"preferredVersion", version}};
  }

  static json Resources() {
    auto resource = [](const char* name, bool namespaced, std::vector<std::string> verbs, const char* kind) {
      return json{{"name", name}, {"singularName", ""}, {"namespaced", namespaced}, {"kind", kind}, {"verbs", verbs}};
    };
    return {{"apiVersion", "v1"},
            {"kind", "APIResourceList"},
            {"groupVersion", StrCat(kAdminApiGroup, "/", kAdminApiVersion)},
            {"resources", json::array({resource("queues", false, {"list"}, "QueueList"),
                                       resource("pending", true, {"list"}, "PendingPodList"),
                                       resource("explanations", true, {"get"}, "Explanation"),
                                       resource("simulations", false, {"create"}, "Simulation"),
                                       resource("leader", false, {"list"}, "Leader")})}};
  }

  // The user the front proxy forwards, if the request comes from the front proxy.
  absl::StatusOr<UserInfo> Authenticate(const httplib::Request& req) {
    std::shared_ptr<const Trust> trust;
    {
      absl::MutexLock lock(&mu_);
      trust = trust_;
    }
    if (trust == nullptr) return absl::UnauthenticatedError("the front proxy's CA is not known yet");
    if (req.ssl == nullptr) return absl::UnauthenticatedError("not a TLS connection");
    X509* leaf = SSL_get1_peer_certificate(req.ssl);
    if (leaf == nullptr) {
      return absl::UnauthenticatedError(
          "no client certificate: this API is served to the API server's front proxy only; call it "
          "through the API server (/apis/admin.tessel.io/v1alpha1/...)");
    }
    std::unique_ptr<X509, decltype(&X509_free)> leaf_owner(leaf, X509_free);
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx_owner(ctx, X509_STORE_CTX_free);
    if (X509_STORE_CTX_init(ctx, trust->store.get(), leaf, SSL_get_peer_cert_chain(req.ssl)) != 1) {
      return absl::InternalError("cannot verify the client certificate");
    }
    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT);
    if (X509_verify_cert(ctx) != 1) {
      return absl::UnauthenticatedError(StrCat(
          "the client certificate is not signed by the requestheader CA: ",
          X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx))));
    }
    char cn[256] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, cn, sizeof(cn));
    const auto& allowed = trust->config.allowed_names;
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), std::string(cn)) == allowed.end()) {
      return absl::UnauthenticatedError(
          StrCat("the client certificate's common name \"", cn, "\" is not in requestheader-allowed-names"));
    }
    std::vector<std::pair<std::string, std::string>> headers(req.headers.begin(), req.headers.end());
    UserInfo user = UserFromHeaders(trust->config, headers);
    if (user.name.empty()) return absl::UnauthenticatedError("the front proxy named no user");
    return user;
  }

  // Authenticates the forwarded user, then answers with that user's rights (each answer asks
  // for the access it needs, namespaced where the call is).
  void Serve(const httplib::Request& req, httplib::Response& res,
             const std::function<absl::StatusOr<json>(const AccessCheck& may)>& answer) {
    absl::StatusOr<UserInfo> user = Authenticate(req);
    if (!user.ok()) {
      WriteStatus(res, 401, StrCat("Unauthorized: ", user.status().message()));
      return;
    }
    const AccessCheck may = [this, &user](const ResourceAccess& access) {
      return authorizer_ != nullptr ? authorizer_->AuthorizeUser(*user, access) : AuthDecision{200, ""};
    };
    absl::StatusOr<json> j = answer(may);
    if (!j.ok()) {
      WriteStatus(res, HttpCode(j.status()), std::string(j.status().message()));
      return;
    }
    res.set_content(j->dump(), "application/json");
  }

  // A call runs at most until its connection's deadline: the guard closes the connection then,
  // and nobody would read the answer.
  CallControl Control() const { return {.deadline = absl::Now() + options_.limits.request_timeout}; }

  const AggregatedApiOptions& options_;
  AdminBackend* backend_;
  UserAuthorizer* authorizer_;
  absl::Mutex mu_;
  std::shared_ptr<const Trust> trust_ ABSL_GUARDED_BY(mu_);
};

AggregatedApiServer::AggregatedApiServer(AggregatedApiOptions options, AdminBackend* backend,
                                         UserAuthorizer* authorizer)
    : options_(std::move(options)), handler_(std::make_unique<Handler>(options_, backend, authorizer)) {}

AggregatedApiServer::~AggregatedApiServer() { Stop(); }

absl::Status AggregatedApiServer::SetRequestHeaderConfig(const RequestHeaderConfig& config) {
  return handler_->SetTrust(config);
}

absl::Status AggregatedApiServer::Start() {
  if (server_ != nullptr) return absl::OkStatus();
  const ServingCert cert = options_.tls;
  auto https = std::make_unique<httplib::SSLServer>([cert](SSL_CTX& ctx) {
    // The client certificate is asked for and taken whatever it is: each request verifies it
    // against the requestheader CA of the moment (it rotates), and a caller without one gets a
    // 401 that says where to go instead of a failed handshake.
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, [](int, X509_STORE_CTX*) { return 1; });
    return SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) == 1 &&
           SSL_CTX_use_certificate_chain_file(&ctx, cert.cert_file.c_str()) == 1 &&
           SSL_CTX_use_PrivateKey_file(&ctx, cert.key_file.c_str(), SSL_FILETYPE_PEM) == 1 &&
           SSL_CTX_check_private_key(&ctx) == 1;
  });
  if (!https->is_valid()) {
    return absl::InvalidArgumentError(
        StrCat("aggregated admin API: cannot serve HTTPS with ", cert.cert_file, " and ", cert.key_file));
  }
  ServingLimits limits = options_.limits;
  limits.max_body_bytes = options_.admin_limits.max_snapshot_bytes;  // Simulate's snapshot
  limits.max_request_bytes = options_.admin_limits.max_snapshot_bytes + limits.max_request_bytes;
  guard_ = ApplyServingLimits(*https, limits, https->ssl_context());
  handler_->Route(*https);
  if (options_.port == 0) {
    port_ = https->bind_to_any_port(options_.bind_address);
    if (port_ <= 0) return absl::UnavailableError(StrCat("aggregated admin API: cannot bind ", options_.bind_address));
  } else {
    if (!https->bind_to_port(options_.bind_address, options_.port)) {
      return absl::UnavailableError(
          StrCat("aggregated admin API: cannot bind ", options_.bind_address, ":", options_.port));
    }
    port_ = options_.port;
  }
  server_ = std::move(https);
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  for (int i = 0; i < 1000 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  spdlog::info("aggregated admin API ({}/{}) on https://{}:{}", kAdminApiGroup, kAdminApiVersion,
               options_.bind_address, port_);
  return absl::OkStatus();
}

void AggregatedApiServer::Stop() {
  if (server_ != nullptr) server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
  guard_.reset();
}

}  // namespace tessel::server
