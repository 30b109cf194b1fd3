# sessionlog build entry points. CI runs .ci/run; these targets are for
# people and for the Docker suites.
#
#   make build          host binaries into bin/
#   make test           the test suite (what CI runs, without the Docker suites)
#   make image          static binaries + root filesystem, then docker build
#                       (pi-node, and nats-server for a cross-region tie-breaker)
#   make secrets        certificates, NATS users and HTTP tokens for the
#                       compose files (pi-ctl gen-secrets) into SECRETS_DIR
#   make compose-test   the docker-compose suites: 3-node cluster, cross-region
#                       (need a Docker engine)
#   make clean

GO        ?= go
IMAGE     ?= pifleet/pi-node
TAG       ?= dev
# The cross-region tie-breaker (nats-server alone), from the same Dockerfile.
TIEBREAKER_IMAGE ?= pifleet/nats-server
GOARCH    ?= $(shell $(GO) env GOARCH)
# The CA bundle copied into the scratch image (pi-node verifies TLS to an
# external NATS with it); Debian/Ubuntu/Alpine path by default.
CA_CERTS  ?= /etc/ssl/certs/ca-certificates.crt
# The build pi-node reports (--version, /v1/status build, pi_build_info):
# stamped here because the toolchain records nothing under
# -buildvcs=false, and because the image's binaries are built on the host.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -X github.com/pifleet/sessionlog/internal/buildinfo.version=$(VERSION) \
             -X github.com/pifleet/sessionlog/internal/buildinfo.revision=$(REVISION)

# The uid/gid pi-node runs as in the image (distroless' "nonroot").
UID       := 65532

# The image's root filesystem is staged here; .dockerignore sends nothing
# else to the Docker engine. Fixed, because .dockerignore names it.
ROOTFS    := build/image/rootfs

# make secrets: the secrets directory docker-compose.yml mounts (its
# ${PI_SECRETS:-./secrets}), for the names of the services. For
# deploy/compose/region.yml:
#   make secrets SECRETS_DIR=deploy/compose/secrets SECRETS_NAMES=a1,b1,t1
SECRETS_DIR   ?= secrets
SECRETS_NAMES ?= pi-node-1,pi-node-2,pi-node-3

.PHONY: all build test image rootfs secrets compose-test clean

all: build

build:
	$(GO) build -ldflags='$(LDFLAGS)' -o bin/ ./cmd/pi-node ./cmd/pi-ctl ./cmd/pi-bench

test:
	$(GO) test -race ./...

# rootfs: everything the scratch images hold, built on the host because no
# base image can be pulled: static binaries (CGO_ENABLED=0, so no libc is
# needed), CA certificates, /etc/passwd and /etc/group naming the non-root
# user (for tools that look the uid up), and the data directory. Its owner
# is set by the Dockerfile (COPY --chown), which works without root here.
rootfs:
	rm -rf $(ROOTFS)
	mkdir -p $(ROOTFS)/etc/ssl/certs $(ROOTFS)/data
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) $(GO) build -trimpath -ldflags='-s -w $(LDFLAGS)' \
		-o $(ROOTFS)/ ./cmd/pi-node ./cmd/pi-ctl ./deploy/healthcheck github.com/nats-io/nats-server/v2
	cp $(CA_CERTS) $(ROOTFS)/etc/ssl/certs/ca-certificates.crt
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:$(UID):$(UID):nonroot:/data:/sbin/nologin\n' > $(ROOTFS)/etc/passwd
	printf 'root:x:0:\nnonroot:x:$(UID):\n' > $(ROOTFS)/etc/group

image: rootfs
	docker build --pull=false -t $(IMAGE):$(TAG) .
	docker build --pull=false --target tiebreaker -t $(TIEBREAKER_IMAGE):$(TAG) .
	@docker image inspect -f '$(IMAGE):$(TAG) {{.Size}} bytes' $(IMAGE):$(TAG)

# After gen-secrets: nats-peers.conf (route and gateway credentials for a plain nats-server,
# the region tie-breaker), and group-readable files (0640, directory 0750;
# ca/, the CA's key, stays the owner's)
# so the containers' user 65532 reads them through group_add
# PI_SECRETS_GID (the compose files' default is 0, root's group; export
# PI_SECRETS_GID=$$(id -g) when you are not root). Nothing is world-readable.
secrets: build
	bin/pi-ctl gen-secrets --out $(SECRETS_DIR) --names $(SECRETS_NAMES)
	$(GO) run ./deploy/natsconf $(SECRETS_DIR)/nats-auth.json > $(SECRETS_DIR)/nats-peers.conf
	chmod 0750 $(SECRETS_DIR)
	find $(SECRETS_DIR) -maxdepth 1 -type f -exec chmod 0640 {} +
	@echo "secrets in $(SECRETS_DIR)"
	@[ "$$(id -u)" -eq 0 ] || echo "not root: export PI_SECRETS_GID=$$(id -g) before docker compose up"

compose-test:
	test/compose/run.sh

clean:
	rm -rf bin build
