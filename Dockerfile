# syntax=docker/dockerfile:1
# tqscavenger's image, built from source: the static binary (pure Go: SQLite
# included, no cgo) on a distroless base with no shell, run as a non-root
# user, for those who can pull golang and distroless images.
#
#   docker build --build-arg REVISION=$(git rev-parse HEAD) -t registry.example.com/tqscavenger:0.1.0 .
#
# scripts/release builds the same image FROM scratch from the linux binary
# it releases (deploy/image/Containerfile), with nothing to pull; that one
# is built and run by deploy/image's tests. This one is not built there (no
# base image can be pulled): those tests check that it runs as that one
# does (ENV, USER, EXPOSE, ENTRYPOINT, CMD) and stamps VERSION.
FROM golang:1.26 AS build
# The commit, for `tqscavenger version`: .dockerignore keeps .git out.
ARG REVISION=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN pkg=github.com/tqscavenger/tqscavenger/internal/buildinfo && \
    CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags="-s -w -X $pkg.version=v$(tr -d ' \n' < VERSION) -X $pkg.revision=$REVISION" \
      -o /out/tqscavenger ./cmd/tqscavenger

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tqscavenger /usr/local/bin/tqscavenger
# serve's status page, /metrics and probes (and worker's /metrics and
# /healthz) on every interface of the container, not serve's default of
# 127.0.0.1:9464, which nothing outside the container reaches. The
# environment outranks a --config file's listen: key: give --listen, or
# set TQSCAVENGER_LISTEN, to change it.
ENV TQSCAVENGER_LISTEN=:9464
# distroless's nonroot user; deploy/*.yaml and the chart run as the same id.
USER 65532:65532
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/tqscavenger"]
CMD ["serve"]
