// List+watch loop of Informer.
#include "scheduler/kube/informer.h"

#include <future>
#include <optional>
#include <random>

#include "scheduler/kube/list_head.h"
#include "spdlog/spdlog.h"

namespace tessel::kube {

using nlohmann::json;

std::string ObjectKey(const json& object) {
  const json* meta = nullptr;
  if (auto it = object.find("metadata"); it != object.end() && it->is_object()) meta = &*it;
  if (meta == nullptr) return "";
  auto str = [&](const char* key) -> std::string {
    auto it = meta->find(key);
    return it != meta->end() && it->is_string() ? it->get<std::string>() : "";
  };
  const std::string ns = str("namespace");
  return ns.empty() ? str("name") : StrCat(ns, "/", str("name"));
}

namespace {

std::string MetaString(const json& object, const char* field) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto v = meta->find(field);
  return v != meta->end() && v->is_string() ? v->get<std::string>() : "";
}

std::string ResourceVersionOf(const json& object) { return MetaString(object, "resourceVersion"); }
std::string UidOf(const json& object) { return MetaString(object, "uid"); }

}  // namespace

std::string UrlEncode(std::string_view value) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

Informer::Informer(KubeClient* client, ResourceSpec spec, InformerHandler* handler,
                   InformerOptions options)
    : client_(client), spec_(std::move(spec)), handler_(handler), options_(options) {}

Informer::~Informer() { Stop(); }

void Informer::Start() { thread_ = std::thread([this] { Run(); }); }

void Informer::RequestStop() {
  if (!stop_.exchange(true)) stopped_.Notify();
}

void Informer::Stop() {
  RequestStop();
  if (thread_.joinable()) thread_.join();
}

std::string Informer::resource_version() const {
  absl::MutexLock lock(&mu_);
  return resource_version_;
}

bool Informer::Sleep(absl::Duration d) { return !stopped_.WaitForNotificationWithTimeout(d); }

std::string Informer::Query(
    std::initializer_list<std::pair<std::string_view, std::string>> params) const {
  std::string q = spec_.path;
  char sep = spec_.path.find('?') == std::string::npos ? '?' : '&';
  auto add = [&](std::string_view k, const std::string& v) {
    StrAppend(&q, std::string_view(&sep, 1), k, "=", UrlEncode(v));
    sep = '&';
  };
  for (const auto& [k, v] : params) {
    if (!v.empty()) add(k, v);
  }
  if (!spec_.field_selector.empty()) add("fieldSelector", spec_.field_selector);
  return q;
}

void Informer::Run() {
  Backoff backoff(options_.backoff);
  bool need_list = true;
  while (!stop_.load()) {
    if (need_list) {
      absl::Status st = List();
      if (stop_.load()) break;
      if (!st.ok()) {
        if (absl::IsNotFound(st) && spec_.optional) {
          if (!absent_.exchange(true)) {
            spdlog::info("informer {}: resource not served ({}); treating it as empty",
                         spec_.name, st.message());
          }
          synced_.store(true);
          Sleep(options_.absent_recheck);
          continue;
        }
        const absl::Duration d = backoff.Next();
        spdlog::warn("informer {}: list failed: {}; retrying in {}", spec_.name, st.message(),
                     absl::FormatDuration(d));
        Sleep(d);
        continue;
      }
      need_list = false;
    }
    const absl::Time started = absl::Now();
    absl::Status st = Watch();
    if (stop_.load()) break;
    if (st.ok()) {
      backoff.Reset();
      continue;  // the server closed the watch: resume from the last resourceVersion
    }
    if (absl::IsFailedPrecondition(st) || absl::IsNotFound(st)) {
      spdlog::info("informer {}: {}; relisting", spec_.name, st.message());
      need_list = true;
      continue;
    }
    // A watch that ran for a while before breaking is not a fast failure loop.
    if (absl::Now() - started > absl::Seconds(30)) backoff.Reset();
    const absl::Duration d = backoff.Next();
    spdlog::warn("informer {}: watch failed: {}; reconnecting in {}", spec_.name, st.message(),
                 absl::FormatDuration(d));
    Sleep(d);
  }
}

void Informer::Prune(json& object) const {
  if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    meta->erase("managedFields");
  }
  if (spec_.prune) spec_.prune(object);
}

absl::Status Informer::List() {
  relists_.fetch_add(1);
  // Pages are reconciled as they arrive: adds and updates at once, deletes (what the store has
  // and no page listed) at the end. `fresh` holds what the list has shown so far.
  StringKeyedMap<Seen> fresh;
  std::string continue_token;
  std::string list_rv;
  auto fetch = [this](const std::string& token) {
    return client_->Do({.path = Query({{"limit", std::to_string(options_.page_size)},
                                       {"continue", token}}),
                        .timeout = absl::Seconds(60),
                        .cancel = &stop_});
  };
  absl::StatusOr<Response> resp = fetch(continue_token);
  for (;;) {
    if (!resp.ok()) return resp.status();
    if (resp->code == 410 && !continue_token.empty()) {
      // The continue token expired: start over with a fresh list. What was delivered from the
      // first pages is in the store already, so it is not delivered twice.
      continue_token.clear();
      fresh.clear();
      resp = fetch(continue_token);
      continue;
    }
    if (!resp->ok()) return resp->ToStatus(StrCat("list ", spec_.name));
    // The next page is asked for before this one is decoded, so that the server prepares it
    // while this thread parses (the token is in the reply's head, ahead of the items).
    std::optional<std::string> next = ListContinueToken(resp->body);
    std::future<absl::StatusOr<Response>> prefetch;
    if (next.has_value() && !next->empty()) prefetch = std::async(std::launch::async, fetch, *next);
    json page = json::parse(resp->body, nullptr, false);
    resp->body.clear();
    resp->body.shrink_to_fit();
    if (page.is_discarded() || !page.is_object()) {
      return absl::DataLossError(StrCat("list ", spec_.name, ": reply is not JSON"));
    }
    if (auto it = page.find("items"); it != page.end() && it->is_array()) {
      for (json& item : *it) {
        const std::string key = ObjectKey(item);
        if (key.empty()) continue;
        Prune(item);
        Seen seen{UidOf(item), ResourceVersionOf(item)};
        auto old = store_.find(key);
        if (old == store_.end()) {
          handler_->OnAdd(item);
        } else if (!seen.uid.empty() && !old->second.uid.empty() && old->second.uid != seen.uid) {
          // Same name, new object: the old one is gone.
          handler_->OnDelete(key, nullptr);
          handler_->OnAdd(item);
        } else if (old->second.resource_version != seen.resource_version) {
          handler_->OnUpdate(item);
        }
        store_[key] = seen;
        fresh[key] = std::move(seen);
        item = nullptr;  // free it now, not with the page
      }
    }
    const json meta = page.contains("metadata") ? page["metadata"] : json::object();
    list_rv = JsonString(meta, "resourceVersion");
    continue_token = JsonString(meta, "continue");
    if (continue_token.empty()) break;
    resp = prefetch.valid() && next == continue_token ? prefetch.get() : fetch(continue_token);
  }

  for (const auto& [key, seen] : store_) {
    if (!fresh.contains(key)) handler_->OnDelete(key, nullptr);
  }
  store_ = std::move(fresh);
  {
    absl::MutexLock lock(&mu_);
    resource_version_ = list_rv;
  }
  if (absent_.exchange(false)) spdlog::info("informer {}: resource is served now", spec_.name);
  if (!synced_.exchange(true)) {
    spdlog::info("informer {}: synced {} objects at resourceVersion {}", spec_.name, store_.size(),
                 list_rv);
  }
  return absl::OkStatus();
}

void Informer::Deliver(const std::string& type, json& object) {
  const std::string key = ObjectKey(object);
  if (key.empty()) return;
  Prune(object);
  Seen seen{UidOf(object), ResourceVersionOf(object)};
  auto it = store_.find(key);
  if (type == "DELETED") {
    if (it == store_.end()) return;
    // A delete of an older object under this name, after the new one was added: stale.
    if (!seen.uid.empty() && !it->second.uid.empty() && seen.uid != it->second.uid) return;
    store_.erase(it);
    handler_->OnDelete(key, &object);
    return;
  }
  if (it == store_.end()) {
    store_[key] = std::move(seen);
    handler_->OnAdd(object);
    return;
  }
  if (!seen.uid.empty() && !it->second.uid.empty() && seen.uid != it->second.uid) {
    // The name now belongs to another object (its delete was missed): replace, never update.
    it->second = std::move(seen);
    handler_->OnDelete(key, nullptr);
    handler_->OnAdd(object);
    return;
  }
  if (it->second.resource_version == seen.resource_version) return;  // already delivered
  it->second = std::move(seen);
  handler_->OnUpdate(object);
}

absl::Status Informer::Watch() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  const int64_t min_s = absl::ToInt64Seconds(options_.min_watch_timeout);
  const int64_t timeout_s = std::uniform_int_distribution<int64_t>(min_s, 2 * min_s)(rng);
  Request req{.path = Query({{"watch", "1"},
                             {"resourceVersion", resource_version()},
                             {"allowWatchBookmarks", "true"},
                             {"timeoutSeconds", std::to_string(timeout_s)}}),
              .timeout = absl::Seconds(timeout_s + 30),
              .retry = false,
              .precondition = [this] {  // runs right before the request leaves
                watches_sent_.fetch_add(1);
                return absl::OkStatus();
              }};
  absl::Status gone = absl::OkStatus();
  auto on_line = [&](std::string_view line) -> bool {
    json event = json::parse(line, nullptr, false);
    if (event.is_discarded() || !event.is_object()) {
      spdlog::warn("informer {}: undecodable watch event skipped", spec_.name);
      return true;
    }
    const std::string type = JsonString(event, "type");
    auto obj = event.find("object");
    if (obj == event.end() || !obj->is_object()) return true;
    if (type == "ERROR") {
      const int64_t code = JsonInt(*obj, "code");
      const std::string message = JsonString(*obj, "message");
      gone = code == 410 ? absl::FailedPreconditionError(StrCat("watch expired: ", message))
                         : absl::UnavailableError(StrCat("watch error ", code, ": ", message));
      return false;
    }
    const std::string rv = ResourceVersionOf(*obj);
    if (type != "BOOKMARK") Deliver(type, *obj);
    if (!rv.empty()) {
      absl::MutexLock lock(&mu_);
      resource_version_ = rv;
    }
    return true;
  };
  absl::StatusOr<Response> resp = client_->Stream(req, on_line, &stop_);
  if (!gone.ok()) return gone;
  if (!resp.ok()) return resp.status();
  if (resp->code == 410) return absl::FailedPreconditionError("watch: 410 Gone");
  if (resp->code == 404 && spec_.optional) return absl::NotFoundError("resource no longer served");
  if (resp->code != 200) return resp->ToStatus(StrCat("watch ", spec_.name));
  return absl::OkStatus();
}

}  // namespace tessel::kube
