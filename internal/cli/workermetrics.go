//go:build !tqs_notemporal

package cli

// The worker's HTTP endpoint: /metrics with the partition activity's
// counters, and /healthz.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"

	"github.com/tqscavenger/tqscavenger/temporalworker"
)

// serveWorkerMetrics listens on addr and serves /metrics and /healthz
// until stop is called; metrics is the SDK handler that counts into it.
func serveWorkerMetrics(addr string, log *slog.Logger) (metrics client.MetricsHandler, stop func(), err error) {
	reg := prometheus.NewRegistry()
	if metrics, err = temporalworker.NewPrometheusMetrics(reg); err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("worker metrics endpoint stopped", "listen", ln.Addr().String(), "error", err)
		}
	}()
	log.Info("worker metrics listening", "listen", ln.Addr().String())
	return metrics, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}
