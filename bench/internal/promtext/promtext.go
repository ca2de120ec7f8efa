// Package promtext reads the Prometheus text a server exposes on /metrics, for the load tools
// that measure a server through it: a body is parsed once, with expfmt, and then asked for the
// series a tool needs, each answer failing with the metric it could not find.
package promtext

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// Metrics is one parsed /metrics body.
type Metrics struct {
	families map[string]*dto.MetricFamily
}

// Scrape reads and parses c's /metrics, as whoever c authenticates as.
func Scrape(ctx context.Context, c rest.Interface) (Metrics, error) {
	body, err := c.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return Metrics{}, fmt.Errorf("reading /metrics: %w", err)
	}
	return Parse(body)
}

// Parse parses a Prometheus text exposition. A body that is not one fails as a whole, naming
// the line and, where the line shows it, the metric: the parser stops at the first error, so the
// series after it are unknown.
func Parse(body []byte) (Metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err == nil {
		return Metrics{families: families}, nil
	}
	var perr expfmt.ParseError
	if !errors.As(err, &perr) {
		return Metrics{}, fmt.Errorf("parsing /metrics: %w", err)
	}
	if name := lineName(body, perr.Line); name != "" {
		return Metrics{}, fmt.Errorf("parsing %s in /metrics (line %d): %s", name, perr.Line, perr.Msg)
	}
	return Metrics{}, fmt.Errorf("parsing /metrics (line %d): %s", perr.Line, perr.Msg)
}

// lineName is the metric a line of the body is about: a sample's name, or the name a HELP or
// TYPE comment describes; "" when the line shows none (or there is no such line). Only a plain
// name counts, so that a line that is not Prometheus text (HTML, say) is not taken for one.
func lineName(body []byte, n int) string {
	lines := strings.Split(string(body), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	fields := strings.Fields(lines[n-1])
	if len(fields) == 0 {
		return ""
	}
	var name string
	switch {
	case fields[0] != "#":
		name, _, _ = strings.Cut(fields[0], "{")
	case len(fields) >= 3 && (fields[1] == "HELP" || fields[1] == "TYPE"):
		name = fields[2]
	}
	if !model.LegacyValidation.IsValidMetricName(name) {
		return ""
	}
	return name
}

// Value is the value of the unlabelled sample of a gauge, counter or untyped metric.
func (m Metrics) Value(name string) (float64, error) {
	f, err := m.scalar(name)
	if err != nil {
		return 0, err
	}
	for _, s := range f.GetMetric() {
		if len(s.GetLabel()) == 0 {
			return value(s), nil
		}
	}
	return 0, fmt.Errorf("/metrics has no %s without labels", name)
}

// Sum adds the values of a gauge's, counter's or untyped metric's samples whose labels include
// every one in match: 0 when none does, an error only when the metric is missing or of another
// type.
func (m Metrics) Sum(name string, match map[string]string) (float64, error) {
	f, err := m.scalar(name)
	if err != nil {
		return 0, err
	}
	var total float64
samples:
	for _, s := range f.GetMetric() {
		for k, v := range match {
			if label(s, k) != v {
				continue samples
			}
		}
		total += value(s)
	}
	return total, nil
}

// SummaryCount is the observation count of a summary's unlabelled sample.
func (m Metrics) SummaryCount(name string) (uint64, error) {
	f, err := m.family(name)
	if err != nil {
		return 0, err
	}
	if f.GetType() != dto.MetricType_SUMMARY {
		return 0, fmt.Errorf("/metrics has %s of type %s, not a summary", name, typeName(f))
	}
	for _, s := range f.GetMetric() {
		if len(s.GetLabel()) == 0 {
			return s.GetSummary().GetSampleCount(), nil
		}
	}
	return 0, fmt.Errorf("/metrics has no %s without labels", name)
}

func (m Metrics) family(name string) (*dto.MetricFamily, error) {
	f := m.families[name]
	if f == nil {
		return nil, fmt.Errorf("/metrics has no %s", name)
	}
	return f, nil
}

// scalar is the family of a metric whose samples are single values; a summary or histogram is
// an error, not a metric without samples.
func (m Metrics) scalar(name string) (*dto.MetricFamily, error) {
	f, err := m.family(name)
	if err != nil {
		return nil, err
	}
	switch f.GetType() {
	case dto.MetricType_GAUGE, dto.MetricType_COUNTER, dto.MetricType_UNTYPED:
		return f, nil
	}
	return nil, fmt.Errorf("/metrics has %s of type %s, not a gauge, counter or untyped metric", name, typeName(f))
}

func typeName(f *dto.MetricFamily) string {
	return strings.ToLower(f.GetType().String())
}

func value(s *dto.Metric) float64 {
	switch {
	case s.GetGauge() != nil:
		return s.GetGauge().GetValue()
	case s.GetCounter() != nil:
		return s.GetCounter().GetValue()
	}
	return s.GetUntyped().GetValue()
}

func label(s *dto.Metric, name string) string {
	for _, l := range s.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
