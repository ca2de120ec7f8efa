package apiserver

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
)

// FlowControlOptions choose how the server limits the requests it works on at once: API
// Priority and Fairness (queues per priority level, shuffle-sharded by flow), as upstream by
// default, or the flat max-in-flight limits, which refuse with 429 at once when full.
type FlowControlOptions struct {
	EnablePriorityAndFairness   bool
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
}

// defaultFlowControlOptions are upstream's defaults.
func defaultFlowControlOptions() FlowControlOptions {
	return FlowControlOptions{EnablePriorityAndFairness: true, MaxRequestsInFlight: 400, MaxMutatingRequestsInFlight: 200}
}

// AddFlags registers the flags, with upstream's names and meanings.
func (o *FlowControlOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.EnablePriorityAndFairness, "enable-priority-and-fairness", o.EnablePriorityAndFairness,
		"If true, replace the max-in-flight handler with an enhanced one that queues and dispatches with priority and fairness "+
			"(the flowcontrol.apiserver.k8s.io FlowSchemas and PriorityLevelConfigurations). If false, requests beyond the "+
			"max-in-flight limits are refused at once with 429, and every client shares those limits: one client's burst "+
			"can starve nodes' lease and status updates.")
	fs.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", o.MaxRequestsInFlight,
		"This and --max-mutating-requests-inflight are summed to determine the server's total concurrency limit "+
			"(which must be positive) if --enable-priority-and-fairness is true. Otherwise, this flag limits the maximum "+
			"number of non-mutating requests in flight, or a zero value disables the limit completely.")
	fs.IntVar(&o.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInFlight,
		"This and --max-requests-inflight are summed to determine the server's total concurrency limit "+
			"(which must be positive) if --enable-priority-and-fairness is true. Otherwise, this flag limits the maximum "+
			"number of mutating requests in flight, or a zero value disables the limit completely.")
}

// Validate reports every invalid setting, with upstream's messages.
func (o *FlowControlOptions) Validate() []error {
	var errs []error
	if o.MaxRequestsInFlight < 0 {
		errs = append(errs, errors.New("--max-requests-inflight can not be negative value"))
	}
	if o.MaxMutatingRequestsInFlight < 0 {
		errs = append(errs, errors.New("--max-mutating-requests-inflight can not be negative value"))
	}
	if o.EnablePriorityAndFairness && o.MaxRequestsInFlight >= 0 && o.MaxMutatingRequestsInFlight >= 0 && o.serverConcurrencyLimit() <= 0 {
		errs = append(errs, fmt.Errorf("--max-requests-inflight=%d and --max-mutating-requests-inflight=%d must add up to something positive with --enable-priority-and-fairness",
			o.MaxRequestsInFlight, o.MaxMutatingRequestsInFlight))
	}
	return errs
}

// serverConcurrencyLimit is what priority and fairness divides among the priority levels.
func (o *FlowControlOptions) serverConcurrencyLimit() int {
	return o.MaxRequestsInFlight + o.MaxMutatingRequestsInFlight
}
