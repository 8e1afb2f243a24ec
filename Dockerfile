# syntax=docker/dockerfile:1
# tqscavenger's image: the static binary (pure Go: SQLite included, no cgo)
# on a distroless base with no shell, run as a non-root user.
#
#   docker build -t registry.example.com/tqscavenger:v1 .
#
# Not built where it was written: no container engine runs there. The
# binary's build (CGO_ENABLED=0) and the manifests in deploy/ are checked.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/tqscavenger ./cmd/tqscavenger

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tqscavenger /usr/local/bin/tqscavenger
# distroless's nonroot user; deploy/*.yaml run as the same id.
USER 65532:65532
# serve's --listen in deploy/kubernetes.yaml: status page, /metrics, probes.
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/tqscavenger"]
CMD ["help"]
