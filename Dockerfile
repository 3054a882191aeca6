# tessel-scheduler container image (Debian 12, multi-stage).
#   docker build -t tessel-scheduler:$(cat VERSION) .
# The build stage installs the build dependencies and builds exactly as a developer does
# (tools/dev setup + tools/dev build, i.e. CMake + Ninja with Debian's -dev packages); the
# runtime stage carries the binary, its shared libraries from Debian 12, CA certificates, and
# runs as a non-root user (65532, matching manifests/deployment.yaml).

FROM debian:12 AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q && apt-get install -y -q --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN apt-get update -q \
    && tools/dev setup \
    && TESSEL_BUILD_DIR=/src/build-image TESSEL_JOBS="$(nproc)" tools/dev build \
    && install -D -m 0755 build-image/bin/tessel-scheduler /out/usr/local/bin/tessel-scheduler \
    && rm -rf /var/lib/apt/lists/*

FROM debian:12-slim AS runtime
ENV DEBIAN_FRONTEND=noninteractive
# The shared libraries tessel-scheduler links against (ldd), from Debian 12. This list is the one
# list of runtime packages: tools/image/runtime_stage.py reads it for the tests, which check that
# it brings every library the binary links (tests/image) and build the runtime root from exactly
# these packages to run the binary in (tests/integration/install_test.sh).
RUN apt-get update -q && apt-get install -y -q --no-install-recommends \
      ca-certificates libcurl4 libyaml-cpp0.7 libspdlog1.10 libfmt9 \
      libabsl20220623 libcpp-httplib0.11 libbrotli1 libssl3 \
      libgrpc++1.51 libgrpc29 libprotobuf32 libre2-9 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /
COPY manifests/config.yaml /etc/tessel/config.yaml
USER 65532:65532
# 10259: HTTPS endpoints (/healthz, /readyz, /metrics); 10260: the gRPC admin API (tesselctl --grpc);
# 10261: the probes alone (plain HTTP, --probe-port); 10262: the aggregated admin API admin.tessel.io,
# for the API server's front proxy (--admin-api-port).
EXPOSE 10259 10260 10261 10262
ENTRYPOINT ["/usr/local/bin/tessel-scheduler"]
CMD ["--config=/etc/tessel/config.yaml"]
