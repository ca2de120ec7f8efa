package defaults

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// The values upstream's flowcontrol.apiserver.k8s.io/v1 fills in.
const (
	defaultMatchingPrecedence       int32 = 1000
	defaultNominalConcurrencyShares int32 = 30
	defaultQueues                   int32 = 64
	defaultHandSize                 int32 = 8
	defaultQueueLengthLimit         int32 = 50
)

// FlowSchema defaults a flow schema as upstream v1: a schema without a precedence matches
// after the suggested ones (1000).
func FlowSchema(fs *flowcontrolv1.FlowSchema) {
	orDefault(&fs.Spec.MatchingPrecedence, defaultMatchingPrecedence)
}

// FlowSchemaList defaults every item.
func FlowSchemaList(l *flowcontrolv1.FlowSchemaList) {
	for i := range l.Items {
		FlowSchema(&l.Items[i])
	}
}

// PriorityLevelConfiguration defaults a priority level as upstream v1. In v1 an explicit
// nominalConcurrencyShares of 0 is kept (only nil gets 30), and nothing is lent unless asked.
func PriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) {
	if e := pl.Spec.Exempt; e != nil {
		orDefaultPtr(&e.NominalConcurrencyShares, 0)
		orDefaultPtr(&e.LendablePercent, 0)
	}
	if l := pl.Spec.Limited; l != nil {
		orDefaultPtr(&l.NominalConcurrencyShares, defaultNominalConcurrencyShares)
		orDefaultPtr(&l.LendablePercent, 0)
		if q := l.LimitResponse.Queuing; q != nil {
			orDefault(&q.Queues, defaultQueues)
			orDefault(&q.HandSize, defaultHandSize)
			orDefault(&q.QueueLengthLimit, defaultQueueLengthLimit)
		}
	}
}

// PriorityLevelConfigurationList defaults every item.
func PriorityLevelConfigurationList(l *flowcontrolv1.PriorityLevelConfigurationList) {
	for i := range l.Items {
		PriorityLevelConfiguration(&l.Items[i])
	}
}
