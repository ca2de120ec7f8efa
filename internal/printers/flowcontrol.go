package printers

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/registry/rest"
)

// flowSchemas prints flow schemas as NAME PRIORITYLEVEL MATCHINGPRECEDENCE DISTINGUISHERMETHOD
// AGE MISSINGPL, as upstream; MISSINGPL is the Dangling condition's status, "?" before the
// config consumer has judged the schema.
var flowSchemas rest.TableConvertor = newTable(
	nameColumn[*flowcontrolv1.FlowSchema](),
	stringColumn("PriorityLevel", doc(flowcontrolv1.PriorityLevelConfigurationReference{}, "name"), func(fs *flowcontrolv1.FlowSchema) any {
		return fs.Spec.PriorityLevelConfiguration.Name
	}),
	stringColumn("MatchingPrecedence", doc(flowcontrolv1.FlowSchemaSpec{}, "matchingPrecedence"), func(fs *flowcontrolv1.FlowSchema) any {
		return int64(fs.Spec.MatchingPrecedence)
	}),
	stringColumn("DistinguisherMethod", doc(flowcontrolv1.FlowSchemaSpec{}, "distinguisherMethod"), func(fs *flowcontrolv1.FlowSchema) any {
		if fs.Spec.DistinguisherMethod == nil {
			return "<none>"
		}
		return string(fs.Spec.DistinguisherMethod.Type)
	}),
	ageColumn[*flowcontrolv1.FlowSchema](),
	stringColumn("MissingPL", "references a broken or non-existent PriorityLevelConfiguration", func(fs *flowcontrolv1.FlowSchema) any {
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				return string(c.Status)
			}
		}
		return "?"
	}),
)

// priorityLevelConfigurations prints priority levels as NAME TYPE NOMINALCONCURRENCYSHARES
// QUEUES HANDSIZE QUEUELENGTHLIMIT AGE, as upstream: "<none>" where the level has no such
// number (exempt, or rejecting rather than queuing).
var priorityLevelConfigurations rest.TableConvertor = newTable(
	nameColumn[*flowcontrolv1.PriorityLevelConfiguration](),
	stringColumn("Type", doc(flowcontrolv1.PriorityLevelConfigurationSpec{}, "type"), func(pl *flowcontrolv1.PriorityLevelConfiguration) any {
		return string(pl.Spec.Type)
	}),
	stringColumn("NominalConcurrencyShares", doc(flowcontrolv1.LimitedPriorityLevelConfiguration{}, "nominalConcurrencyShares"), func(pl *flowcontrolv1.PriorityLevelConfiguration) any {
		if l := pl.Spec.Limited; l != nil && l.NominalConcurrencyShares != nil {
			return int64(*l.NominalConcurrencyShares)
		}
		return "<none>"
	}),
	stringColumn("Queues", doc(flowcontrolv1.QueuingConfiguration{}, "queues"), queuingCell(func(q *flowcontrolv1.QueuingConfiguration) int32 { return q.Queues })),
	stringColumn("HandSize", doc(flowcontrolv1.QueuingConfiguration{}, "handSize"), queuingCell(func(q *flowcontrolv1.QueuingConfiguration) int32 { return q.HandSize })),
	stringColumn("QueueLengthLimit", doc(flowcontrolv1.QueuingConfiguration{}, "queueLengthLimit"), queuingCell(func(q *flowcontrolv1.QueuingConfiguration) int32 { return q.QueueLengthLimit })),
	ageColumn[*flowcontrolv1.PriorityLevelConfiguration](),
)

func queuingCell(value func(*flowcontrolv1.QueuingConfiguration) int32) func(*flowcontrolv1.PriorityLevelConfiguration) any {
	return func(pl *flowcontrolv1.PriorityLevelConfiguration) any {
		if l := pl.Spec.Limited; l != nil && l.LimitResponse.Queuing != nil {
			return int64(value(l.LimitResponse.Queuing))
		}
		return "<none>"
	}
}
