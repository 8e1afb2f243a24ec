// Package check validates the Kubernetes manifests beside it by decoding
// them strictly into the Kubernetes API types: an unknown or misspelt
// field, a value of the wrong type or a duplicate key fails the test. It
// is a module of its own so that k8s.io/api stays out of tqscavenger's.
// It also reads the systemd unit tqscavenger.service for its restart
// settings.
package check
