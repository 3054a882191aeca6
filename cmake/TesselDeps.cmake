# Finds every third-party dependency. All come from Debian 12 packages; tools/dev setup installs
# them. A missing package fails here with the name of the Debian package to install.
find_package(Threads REQUIRED)

macro(tessel_require pkg debian)
  find_package(${pkg} ${ARGN} QUIET)
  if(NOT ${pkg}_FOUND)
    message(FATAL_ERROR "${pkg} not found: install the Debian package '${debian}' (tools/dev setup does)")
  endif()
endmacro()

tessel_require(absl libabsl-dev CONFIG)
tessel_require(Protobuf libprotobuf-dev)
tessel_require(gRPC libgrpc++-dev CONFIG)
tessel_require(nlohmann_json nlohmann-json3-dev 3.11 CONFIG)
tessel_require(yaml-cpp libyaml-cpp-dev CONFIG)
tessel_require(spdlog libspdlog-dev CONFIG)
tessel_require(fmt libfmt-dev CONFIG)
tessel_require(CURL libcurl4-openssl-dev)
tessel_require(OpenSSL libssl-dev 3)
tessel_require(Catch2 catch2 2.13 CONFIG)
tessel_require(benchmark libbenchmark-dev CONFIG)

find_package(PkgConfig REQUIRED)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
# RE2 for CEL's matches() in DRA device selectors (scheduler/dra/cel), as cel-go uses RE2 syntax.
pkg_check_modules(RE2 IMPORTED_TARGET re2)
if(NOT RE2_FOUND)
  message(FATAL_ERROR "re2 not found: install the Debian package 'libre2-dev' (tools/dev setup does)")
endif()

if(NOT TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp::yaml-cpp ALIAS yaml-cpp)
endif()
