# sessionlog build entry points. CI runs .ci/run; these targets are for
# people and for the Docker suites.
#
#   make build          host binaries into bin/
#   make test           the test suite (what CI runs, without the Docker suites)
#   make image          static binaries + root filesystem, then docker build
#                       (pi-node, and nats-server for a cross-region tie-breaker)
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
# The uid/gid pi-node runs as in the image (distroless' "nonroot").
UID       := 65532

# The image's root filesystem is staged here; .dockerignore sends nothing
# else to the Docker engine. Fixed, because .dockerignore names it.
ROOTFS    := build/image/rootfs

.PHONY: all build test image rootfs compose-test clean

all: build

build:
	$(GO) build -o bin/ ./cmd/pi-node ./cmd/pi-ctl

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
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) $(GO) build -trimpath -ldflags='-s -w' \
		-o $(ROOTFS)/ ./cmd/pi-node ./cmd/pi-ctl ./deploy/healthcheck github.com/nats-io/nats-server/v2
	cp $(CA_CERTS) $(ROOTFS)/etc/ssl/certs/ca-certificates.crt
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:$(UID):$(UID):nonroot:/data:/sbin/nologin\n' > $(ROOTFS)/etc/passwd
	printf 'root:x:0:\nnonroot:x:$(UID):\n' > $(ROOTFS)/etc/group

image: rootfs
	docker build --pull=false -t $(IMAGE):$(TAG) .
	docker build --pull=false --target tiebreaker -t $(TIEBREAKER_IMAGE):$(TAG) .
	@docker image inspect -f '$(IMAGE):$(TAG) {{.Size}} bytes' $(IMAGE):$(TAG)

compose-test:
	test/compose/run.sh

clean:
	rm -rf bin build
