// Package helmcheck lints and renders the Helm chart deploy/helm/tqscavenger
// with Helm's own Go packages (helm lint, helm template) over each mode and
// a matrix of values, and keeps the rendered documents in files: the raw
// manifests deploy/kubernetes.yaml and deploy/cronjob.yaml and
// deploy/helm/rendered/*.yaml. A render that differs from its file fails
// (go test ./... -update rewrites them), so the raw manifests cannot drift
// from the chart; deploy/check decodes every one of those files strictly
// into the Kubernetes API types. It also holds values.schema.json to
// values.yaml and to every value the templates read (the chart's own
// objects closed, what passes through to Kubernetes open), and the alert
// rules' runbook_url and severities in the files and the PrometheusRule.
// It is a module of its own so that helm.sh/helm stays out of
// tqscavenger's and deploy/check's.
package helmcheck
