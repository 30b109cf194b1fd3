# pi-node image: FROM scratch, holding only static binaries and the few files
# they need. Build it with `make image`, which compiles the binaries on the
# host (CGO_ENABLED=0) and stages the root filesystem in build/image/rootfs;
# a plain `docker build .` without that step fails at the first COPY.

# The tie-breaker of a cross-region deployment (docs/CROSS-REGION.md): the
# nats-server that pi-node embeds, alone, and the probe. A stage of its own,
# so the pi-node image stays as it is; `make image` tags it
# pifleet/nats-server:dev (--target tiebreaker) for deploy/compose/region.yml.
FROM scratch AS tiebreaker
COPY build/image/rootfs/nats-server build/image/rootfs/healthcheck /
COPY --chown=65532:65532 build/image/rootfs/data /data
USER 65532:65532
WORKDIR /data
VOLUME ["/data"]
EXPOSE 4222 6222 7222
ENTRYPOINT ["/nats-server"]

# The pi-node image, the default target.
FROM scratch AS pi-node

LABEL org.opencontainers.image.title="pi-node" \
      org.opencontainers.image.description="sessionlog: pi session trees on NATS JetStream" \
      org.opencontainers.image.licenses="MIT"

# /etc/passwd and /etc/group name the non-root user 65532; the CA bundle
# verifies TLS to an external NATS (--tls-ca overrides it).
COPY build/image/rootfs/etc/ /etc/
COPY build/image/rootfs/pi-node build/image/rootfs/pi-ctl build/image/rootfs/healthcheck /
# The data directory must belong to the user pi-node runs as: scratch has no
# shell to chown it, COPY --chown does. A named volume mounted on /data
# starts as a copy of this directory, ownership included.
COPY --chown=65532:65532 build/image/rootfs/data /data

# Container defaults: listen on every interface of the container (what is
# reachable from outside is decided by publishing ports), data in /data.
# Every other flag keeps pi-node's default; flags given as the command win.
ENV PI_NODE_DATA_DIR=/data \
    PI_NODE_HTTP_LISTEN=0.0.0.0:8080 \
    PI_NODE_CLIENT_LISTEN=0.0.0.0:4222 \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt

USER 65532:65532
WORKDIR /data
VOLUME ["/data"]
# 8080 HTTP API, 4222 NATS clients, 6222 NATS routes (--cluster-listen).
EXPOSE 8080 4222 6222

# /healthcheck GETs /readyz of the pi-node at PI_NODE_HTTP_LISTEN and exits 0
# on 200. Readiness rather than liveness: the node is healthy when it can
# serve (JetStream reachable, stream and bucket present, caught up).
HEALTHCHECK --interval=5s --timeout=4s --start-period=60s --retries=3 CMD ["/healthcheck"]

# pi-node handles SIGTERM itself (drains for --shutdown-grace), so it runs
# as PID 1 without an init.
ENTRYPOINT ["/pi-node"]
