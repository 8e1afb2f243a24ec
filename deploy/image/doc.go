// Package image tests tqscavenger's release and its container image: that
// the version the release stamps is the Helm chart's default image tag,
// that the release's configuration passes its own check (scripts/release
// --check), that the Dockerfile, which cannot be built where no base
// image can be pulled, sets what the tested image sets, and, with podman
// and runc, that the image scripts/release builds FROM scratch runs: serve
// answers /healthz and /metrics on a published port, run scavenges a
// SQLite file mounted from the host and PostgreSQL on the host's network,
// as a non-root user with a writable /tmp.
//
// It is a module of its own so that the image's build and runs stay out of
// the main module's go test ./...; .ci/run runs it. Without podman it skips
// the image tests, and under CI=true fails them.
package image
