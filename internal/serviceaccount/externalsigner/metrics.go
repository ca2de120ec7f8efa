package externalsigner

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The metrics carry kube-apiserver's names, so dashboards made for it work unchanged.
var (
	fetchKeysTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "apiserver", Subsystem: "externaljwt", Name: "fetch_keys_request_total",
		Help:           "FetchKeys calls to the external signer, by result code (a gRPC code, or unknown-non-grpc for an answer refused here).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"code"})
	fetchKeysSuccess = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "apiserver", Subsystem: "externaljwt", Name: "fetch_keys_success_timestamp",
		Help:           "Unix time in seconds of the last FetchKeys call whose keys were taken.",
		StabilityLevel: metrics.ALPHA,
	})
	fetchKeysData = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "apiserver", Subsystem: "externaljwt", Name: "fetch_keys_data_timestamp",
		Help:           "Unix time in seconds the external signer says the keys in use were read from their source.",
		StabilityLevel: metrics.ALPHA,
	})
	signTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "apiserver", Subsystem: "externaljwt", Name: "sign_request_total",
		Help:           "Tokens asked of the external signer, by result code (a gRPC code, or unknown-non-grpc for a token refused here).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"code"})
	callDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "apiserver", Subsystem: "externaljwt", Name: "request_duration_seconds",
		Help:           "Duration of calls to the external signer, by method and gRPC code.",
		Buckets:        []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		StabilityLevel: metrics.ALPHA,
	}, []string{"method", "code"})
)

var registerMetrics sync.Once

func registerAll() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(fetchKeysTotal, fetchKeysSuccess, fetchKeysData, signTotal, callDuration)
	})
}

// resultCode is the gRPC code of err, "OK" for none, and "unknown-non-grpc" for an error of
// this client's own checks.
func resultCode(err error) string {
	if err == nil {
		return "OK"
	}
	var s interface{ GRPCStatus() *status.Status }
	if errors.As(err, &s) {
		return s.GRPCStatus().Code().String()
	}
	return "unknown-non-grpc"
}

// timeCalls records every call's duration.
func timeCalls(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	callDuration.WithLabelValues(method, resultCode(err)).Observe(time.Since(start).Seconds())
	return err
}
