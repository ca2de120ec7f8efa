// Package clusterroleaggregation keeps the rules of every ClusterRole with an
// aggregationRule equal to the union of the rules of the ClusterRoles its selectors match,
// which is how admin, edit and view grow when other roles are labelled into them.
package clusterroleaggregation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/idplane/idplane/internal/controller/keyworker"
)

// Controller aggregates ClusterRole rules.
type Controller struct {
	client kubernetes.Interface
	lister rbaclisters.ClusterRoleLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller fed by the ClusterRole informer.
func New(client kubernetes.Interface, clusterRoles rbacinformers.ClusterRoleInformer) (*Controller, error) {
	c := &Controller{
		client: client,
		lister: clusterRoles.Lister(),
		synced: clusterRoles.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "clusterroleaggregation"}),
	}
	// Any change to any ClusterRole (its labels, its rules, its disappearance) may change
	// what some aggregated role should hold, and aggregated roles are few: resync them all.
	enqueueAll := func(any) { c.enqueueAggregated() }
	_, err := clusterRoles.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueAll,
		UpdateFunc: func(_, obj any) { enqueueAll(obj) },
		DeleteFunc: enqueueAll,
	})
	if err != nil {
		return nil, fmt.Errorf("watching clusterroles: %w", err)
	}
	return c, nil
}

// Run aggregates ClusterRoles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	keyworker.Run(ctx, c.queue, c.synced, workers, "Aggregating clusterrole", c.sync)
}

func (c *Controller) enqueueAggregated() {
	roles, err := c.lister.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("listing clusterroles: %w", err))
		return
	}
	for _, r := range roles {
		if r.AggregationRule != nil {
			c.queue.Add(r.Name)
		}
	}
}

func (c *Controller) sync(ctx context.Context, name string) error {
	role, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if role.AggregationRule == nil {
		return nil
	}
	rules, err := c.aggregate(role)
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(role.Rules, rules) {
		return nil
	}
	updated := role.DeepCopy()
	updated.Rules = rules
	// The update carries the resourceVersion read from the cache: if the role changed
	// since, the conflict sends it back through the queue to be recomputed.
	_, err = c.client.RbacV1().ClusterRoles().Update(ctx, updated, metav1.UpdateOptions{})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// The informer has not caught up with a concurrent write yet; the retry sees it.
		return keyworker.Wait(fmt.Errorf("updating clusterrole %q: %w", name, err))
	default:
		return fmt.Errorf("updating clusterrole %q: %w", name, err)
	}
}

// aggregate returns the rules of every other ClusterRole that a selector of role matches,
// taken from the roles in name order and each kept once, so that the result, and therefore
// whether an update is needed, does not depend on the order of the cache.
func (c *Controller) aggregate(role *rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	sources := map[string]*rbacv1.ClusterRole{}
	for _, s := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&s)
		if err != nil {
			return nil, fmt.Errorf("clusterrole %q has an invalid aggregation selector: %w", role.Name, err)
		}
		matched, err := c.lister.List(selector)
		if err != nil {
			return nil, fmt.Errorf("listing clusterroles for %q: %w", role.Name, err)
		}
		for _, m := range matched {
			if m.Name != role.Name {
				sources[m.Name] = m
			}
		}
	}
	ordered := slices.SortedFunc(maps.Values(sources), func(a, b *rbacv1.ClusterRole) int {
		return strings.Compare(a.Name, b.Name)
	})
	var rules []rbacv1.PolicyRule
	for _, s := range ordered {
		for _, r := range s.Rules {
			if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
				rules = append(rules, *r.DeepCopy())
			}
		}
	}
	return rules, nil
}
