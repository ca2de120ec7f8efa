// Package apfconfig keeps the API Priority and Fairness configuration objects every server
// relies on, as kube-apiserver's config producer does: the mandatory flow schemas and priority
// levels (exempt, catch-all) always exist with the spec bootstrap gives them; the suggested ones
// (system-nodes, node-high, leader-election, ...) are created when missing and kept up to date
// while their apf.kubernetes.io/autoupdate-spec annotation says so, so an admin's edit with the
// annotation "false" is kept; objects the server once suggested and no longer does are deleted
// only when the annotation says they are still the server's.
//
// Every replica runs it. The state is read live each round and every write is preconditioned on
// what was read, so replicas that race converge: a conflict makes the loser read again.
package apfconfig

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/klog/v2"
)

// FieldManager is who the producer's writes are recorded as, upstream's name.
const FieldManager = "api-priority-and-fairness-config-producer-v1"

// maxConflicts bounds how often one object is read again after losing a race in one round.
const maxConflicts = 5

// object is a flow schema or a priority level.
type object interface {
	runtime.Object
	metav1.Object
}

// client is what the producer needs of a typed flowcontrol client, for either kind.
type client[T object, L any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// kind is how the producer treats one kind: where it reads and writes, what bootstrap says of it
// and how two of its specs compare.
type kind[T object, L any] struct {
	name      string
	client    client[T, L]
	items     func(L) []T
	mandatory []T
	suggested []T
	// sameSpec says whether current already has wanted's spec as far as the server keeps it.
	sameSpec func(wanted, current T) bool
	// withSpec is current with wanted's spec.
	withSpec func(current, wanted T) T
}

// Producer ensures the bootstrap configuration through a client.
type Producer struct {
	flowSchemas    kind[*flowcontrolv1.FlowSchema, *flowcontrolv1.FlowSchemaList]
	priorityLevels kind[*flowcontrolv1.PriorityLevelConfiguration, *flowcontrolv1.PriorityLevelConfigurationList]
}

// New returns a producer writing through c (the server's loopback client).
func New(c flowcontrolclient.FlowcontrolV1Interface) *Producer {
	return &Producer{
		flowSchemas: kind[*flowcontrolv1.FlowSchema, *flowcontrolv1.FlowSchemaList]{
			name:      "flow schema",
			client:    c.FlowSchemas(),
			items:     func(l *flowcontrolv1.FlowSchemaList) []*flowcontrolv1.FlowSchema { return pointers(l.Items) },
			mandatory: bootstrap.MandatoryFlowSchemas,
			suggested: bootstrap.SuggestedFlowSchemas,
			sameSpec: func(wanted, current *flowcontrolv1.FlowSchema) bool {
				return apiequality.Semantic.DeepEqual(wanted.Spec, current.Spec)
			},
			withSpec: func(current, wanted *flowcontrolv1.FlowSchema) *flowcontrolv1.FlowSchema {
				out := current.DeepCopy()
				out.Spec = *wanted.Spec.DeepCopy()
				return out
			},
		},
		priorityLevels: kind[*flowcontrolv1.PriorityLevelConfiguration, *flowcontrolv1.PriorityLevelConfigurationList]{
			name:   "priority level",
			client: c.PriorityLevelConfigurations(),
			items: func(l *flowcontrolv1.PriorityLevelConfigurationList) []*flowcontrolv1.PriorityLevelConfiguration {
				return pointers(l.Items)
			},
			mandatory: bootstrap.MandatoryPriorityLevelConfigurations,
			suggested: bootstrap.SuggestedPriorityLevelConfigurations,
			sameSpec: func(wanted, current *flowcontrolv1.PriorityLevelConfiguration) bool {
				return apiequality.Semantic.DeepEqual(levelSpecKept(wanted, current), current.Spec)
			},
			withSpec: func(current, wanted *flowcontrolv1.PriorityLevelConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
				out := current.DeepCopy()
				out.Spec = levelSpecKept(wanted, current)
				return out
			},
		},
	}
}

// levelSpecKept is the spec the producer keeps a priority level at: bootstrap's, except that the
// exempt level's shares and lendable percent are the admin's to size (as validation allows).
func levelSpecKept(wanted, current *flowcontrolv1.PriorityLevelConfiguration) flowcontrolv1.PriorityLevelConfigurationSpec {
	spec := *wanted.Spec.DeepCopy()
	if wanted.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt && current.Spec.Exempt != nil {
		spec.Exempt = current.Spec.Exempt.DeepCopy()
	}
	return spec
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// Ensure runs one round, as upstream orders it: the suggested objects, the mandatory ones, then
// the removal of objects bootstrap no longer has. Priority levels go first, so a new flow schema
// never points at a level that is not there yet.
func (p *Producer) Ensure(ctx context.Context) error {
	return errors.Join(ensure(ctx, p.priorityLevels), ensure(ctx, p.flowSchemas))
}

func ensure[T object, L any](ctx context.Context, k kind[T, L]) error {
	var errs []error
	for _, wanted := range k.suggested {
		errs = append(errs, k.ensureOne(ctx, wanted, false))
	}
	for _, wanted := range k.mandatory {
		errs = append(errs, k.ensureOne(ctx, wanted, true))
	}
	errs = append(errs, k.removeDropped(ctx))
	return errors.Join(errs...)
}

// ensureOne creates wanted when missing, else brings the existing object's spec and annotation
// to what the autoupdate rules say, reading again when another writer got there first.
func (k kind[T, L]) ensureOne(ctx context.Context, wanted T, mandatory bool) error {
	for range maxConflicts {
		current, err := k.client.Get(ctx, wanted.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = k.client.Create(ctx, wanted.DeepCopyObject().(T), metav1.CreateOptions{FieldManager: FieldManager})
			if err == nil {
				klog.V(2).InfoS("Created APF bootstrap configuration", "kind", k.name, "name", wanted.GetName())
			}
			if apierrors.IsAlreadyExists(err) {
				continue // another replica created it: judge what it wrote
			}
			return wrap(err, "creating", k.name, wanted)
		}
		if err != nil {
			return wrap(err, "reading", k.name, wanted)
		}
		out, update := k.desired(wanted, current, mandatory)
		if !update {
			return nil
		}
		_, err = k.client.Update(ctx, out, metav1.UpdateOptions{FieldManager: FieldManager})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err == nil {
			klog.V(2).InfoS("Updated APF bootstrap configuration", "kind", k.name, "name", wanted.GetName(), "autoupdate", out.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey])
		}
		return wrap(err, "updating", k.name, wanted)
	}
	return fmt.Errorf("ensuring %s %q: still conflicting after %d attempts", k.name, wanted.GetName(), maxConflicts)
}

// desired is the object current should become, and whether that differs from current. The
// mandatory objects are always updated and always say so; a suggested one is updated while its
// annotation says "true" or, without a valid annotation, while it was never edited (generation
// 1); its annotation is then set to say which.
func (k kind[T, L]) desired(wanted, current T, mandatory bool) (T, bool) {
	autoUpdate := mandatory || autoUpdateSpec(current)
	specChange := autoUpdate && !k.sameSpec(wanted, current)
	annotationChange := !annotationSays(current, autoUpdate)
	if !specChange && !annotationChange {
		return current, false
	}
	out := current.DeepCopyObject().(T)
	if specChange {
		out = k.withSpec(current, wanted)
	}
	annotations := map[string]string{}
	for key, v := range out.GetAnnotations() {
		annotations[key] = v
	}
	annotations[flowcontrolv1.AutoUpdateAnnotationKey] = strconv.FormatBool(autoUpdate)
	out.SetAnnotations(annotations)
	return out, true
}

// autoUpdateSpec reads the annotation; without a valid one, an object never edited since it was
// created (generation 1) is taken to be the server's.
func autoUpdateSpec(obj metav1.Object) bool {
	if v, err := strconv.ParseBool(obj.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err == nil {
		return v
	}
	return obj.GetGeneration() == 1
}

func annotationSays(obj metav1.Object, want bool) bool {
	v, ok := obj.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]
	if !ok {
		return false
	}
	got, err := strconv.ParseBool(v)
	return err == nil && got == want
}

// removeDropped deletes the objects bootstrap no longer has whose annotation says they are
// still the server's ("true"); an admin's own objects carry no such annotation and stay. The
// delete is preconditioned on what was read, so an admin's edit made meanwhile wins.
func (k kind[T, L]) removeDropped(ctx context.Context) error {
	list, err := k.client.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing %ss: %w", k.name, err)
	}
	known := map[string]bool{}
	for _, o := range append(append([]T{}, k.mandatory...), k.suggested...) {
		known[o.GetName()] = true
	}
	var errs []error
	for _, current := range k.items(list) {
		if known[current.GetName()] {
			continue
		}
		if v, err := strconv.ParseBool(current.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err != nil || !v {
			continue
		}
		uid, rv := current.GetUID(), current.GetResourceVersion()
		err := k.client.Delete(ctx, current.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
		switch {
		case err == nil:
			klog.V(2).InfoS("Deleted APF configuration bootstrap no longer has", "kind", k.name, "name", current.GetName())
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// gone already, or changed since read: the next round judges it again
		default:
			errs = append(errs, wrap(err, "deleting", k.name, current))
		}
	}
	return errors.Join(errs...)
}

func wrap(err error, verb, kind string, obj metav1.Object) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %s %q: %w", verb, kind, obj.GetName(), err)
}

// Run ensures the configuration until a round succeeds (retrying every second, for at most
// timeout), then returns, leaving a goroutine that runs a round every interval until ctx ends,
// as upstream's producer does, so a deleted or edited mandatory object comes back.
func (p *Producer) Run(ctx context.Context, timeout, interval time.Duration) error {
	first, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = p.Ensure(first); last == nil {
			break
		}
		klog.ErrorS(last, "Ensuring the APF bootstrap configuration failed; retrying")
		select {
		case <-first.Done():
			return fmt.Errorf("ensuring the APF bootstrap configuration: %w", last)
		case <-time.After(time.Second):
		}
	}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := p.Ensure(ctx); err != nil && ctx.Err() == nil {
					klog.ErrorS(err, "Ensuring the APF bootstrap configuration failed; retrying at the next round")
				}
			}
		}
	}()
	return nil
}
