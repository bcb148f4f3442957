# Suplash Sync container. Mirrors exactly what CI proves (.ci/run): the same apt
# packages, `swift build -c release`, and the binary started with `serve`.
# Not built in CI (no Docker daemon on the CI machines).

# ---- build stage: the Swift toolchain image
FROM swift:6.3-bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libsqlite3-dev libpq-dev libssl-dev libargon2-dev zlib1g-dev libxml2-dev libarchive-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
# The Swift runtime and Foundation linked into the binary (about 5 MiB less resident memory;
# docs/operations.md), so the runtime stage needs no Swift libraries.
RUN swift build -c release --product suplash-server --static-swift-stdlib

# ---- runtime stage: slim Debian with only the runtime libraries and tzdata
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libsqlite3-0 libpq5 postgresql-client libssl3 libargon2-1 zlib1g libcurl4 libstdc++6 tzdata ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin suplash \
 && mkdir -p /data /app/bin && chown suplash:suplash /data
COPY --from=build /src/.build/release/suplash-server /app/bin/suplash-server
COPY Migrations /app/Migrations
COPY config /app/config
COPY docs/openapi.json /app/docs/openapi.json
WORKDIR /app
USER suplash
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=3s --retries=3 CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/app/bin/suplash-server"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080", "--data-dir", "/data"]
