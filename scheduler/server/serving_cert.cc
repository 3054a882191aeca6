// Self-signed serving certificates with OpenSSL 3 (see serving_cert.h).
#include "scheduler/server/serving_cert.h"

#include <arpa/inet.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "scheduler/util/strings.h"

namespace tessel::server {
namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;

bool IsIp(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

absl::Status OpenSslError(std::string_view what) {
  return absl::InternalError(StrCat("self-signed certificate: ", what, " failed"));
}

// Writes with `write` into `path`, created with `mode` (the key is 0600).
template <typename Write>
absl::Status WritePem(const std::string& path, mode_t mode, Write write) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return absl::PermissionDeniedError(StrCat("cannot write ", path));
  chmod(path.c_str(), mode);
  const bool ok = write(f) == 1;
  std::fclose(f);
  return ok ? absl::OkStatus() : OpenSslError(StrCat("writing ", path));
}

}  // namespace

absl::Status WriteSelfSignedCert(const std::string& cert_file, const std::string& key_file,
                                 const std::vector<std::string>& hosts) {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return OpenSslError("EC key generation");
  X509Ptr cert(X509_new());
  if (!cert) return OpenSslError("X509_new");
  X509_set_version(cert.get(), 2);  // v3
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), static_cast<long>(time(nullptr)));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60 * 60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24 * 60 * 60);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  const std::string cn = StrCat("tessel-scheduler@", time(nullptr));
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);  // self-signed

  std::string san;
  for (const std::string& h : hosts) {
    if (h.empty()) continue;
    StrAppend(&san, san.empty() ? "" : ",", IsIp(h) ? "IP:" : "DNS:", h);
  }
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
  for (const auto& [nid, value] : {std::pair{NID_subject_alt_name, san},
                                   std::pair{NID_basic_constraints, std::string("critical,CA:FALSE")},
                                   std::pair{NID_key_usage, std::string("critical,digitalSignature")},
                                   std::pair{NID_ext_key_usage, std::string("serverAuth")}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (ext == nullptr) return OpenSslError(StrCat("extension ", OBJ_nid2sn(nid), "=", value));
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) return OpenSslError("signing");

  if (absl::Status st = WritePem(key_file, 0600, [&](FILE* f) {
        return PEM_write_PrivateKey(f, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
      });
      !st.ok()) {
    return st;
  }
  return WritePem(cert_file, 0644, [&](FILE* f) { return PEM_write_X509(f, cert.get()); });
}

absl::StatusOr<ServingCert> ServingCertFor(const ServingCertOptions& options) {
  if (!options.cert_file.empty() || !options.key_file.empty()) {
    if (options.cert_file.empty() || options.key_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls-cert-file and --tls-private-key-file: give both, or neither (a self-signed "
          "certificate is generated)");
    }
    for (const std::string* f : {&options.cert_file, &options.key_file}) {
      if (access(f->c_str(), R_OK) != 0) return absl::NotFoundError(StrCat("cannot read ", *f));
    }
    return ServingCert{options.cert_file, options.key_file};
  }
  std::string dir = options.cert_dir;
  if (dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tessel-scheduler-certs-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) return absl::InternalError("cannot create a certificate directory");
    dir = tmpl;
  } else {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return absl::PermissionDeniedError(StrCat("--cert-dir ", dir, ": ", ec.message()));
  }
  std::vector<std::string> hosts = options.hosts;
  char hostname[256] = {0};
  if (gethostname(hostname, sizeof(hostname) - 1) == 0) hosts.emplace_back(hostname);
  ServingCert cert{StrCat(dir, "/tessel-scheduler.crt"), StrCat(dir, "/tessel-scheduler.key")};
  if (absl::Status st = WriteSelfSignedCert(cert.cert_file, cert.key_file, hosts); !st.ok()) return st;
  return cert;
}

}  // namespace tessel::server
