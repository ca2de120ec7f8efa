package apiserver

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestFlowControlOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    FlowControlOptions
		wantErr string
	}{
		{name: "upstream's defaults", want: FlowControlOptions{EnablePriorityAndFairness: true, MaxRequestsInFlight: 400, MaxMutatingRequestsInFlight: 200}},
		{name: "max-in-flight with limits off", args: []string{"--enable-priority-and-fairness=false", "--max-requests-inflight=0", "--max-mutating-requests-inflight=0"},
			want: FlowControlOptions{}},
		{name: "negative read-only limit", args: []string{"--max-requests-inflight=-1"},
			want: FlowControlOptions{EnablePriorityAndFairness: true, MaxRequestsInFlight: -1, MaxMutatingRequestsInFlight: 200}, wantErr: "--max-requests-inflight can not be negative value"},
		{name: "negative mutating limit", args: []string{"--enable-priority-and-fairness=false", "--max-mutating-requests-inflight=-5"},
			want: FlowControlOptions{MaxRequestsInFlight: 400, MaxMutatingRequestsInFlight: -5}, wantErr: "--max-mutating-requests-inflight can not be negative value"},
		{name: "priority and fairness needs a positive total", args: []string{"--max-requests-inflight=0", "--max-mutating-requests-inflight=0"},
			want: FlowControlOptions{EnablePriorityAndFairness: true}, wantErr: "must add up to something positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if o.FlowControl != tc.want {
				t.Errorf("options %+v, want %+v", o.FlowControl, tc.want)
			}
			err := errors.Join(o.FlowControl.Validate()...)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Validate: %v, want %q", err, tc.wantErr)
			}
			if err := o.Validate(); (err == nil) != (tc.wantErr == "") {
				t.Errorf("Options.Validate: %v, want an error: %v", err, tc.wantErr != "")
			}
		})
	}
}
