// Package leaderelection runs work on one process at a time among replicas that share a
// coordination.k8s.io Lease. Unlike a controller manager, which exits when it loses the lease,
// a replica here keeps campaigning: the process does other work (it serves the API) that must
// outlive a lost term.
package leaderelection

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Config says which Lease to campaign for, as whom, and what to do while holding it.
type Config struct {
	Leases    coordinationv1client.LeasesGetter
	Namespace string
	Name      string
	// Identity names this replica in the Lease's holderIdentity; see NewIdentity.
	Identity string

	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// Lead does the work of a term. Its context ends when the lease is lost or the elector
	// stops; Lead must return soon after, since the next term, here or on another replica,
	// waits for it (here) or for the lease (there).
	Lead func(ctx context.Context)
}

// NewIdentity is the host name with a random suffix, so that two replicas on one host, or a
// restarted one, never take each other for the holder.
func NewIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("reading the host name for the leader election identity: %w", err)
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// Elector campaigns for the Lease and runs Config.Lead during each term it wins.
type Elector struct {
	cfg Config
	mu  sync.Mutex
	// term is closed when the latest term's Lead has returned; nil before the first term.
	term chan struct{}
}

// New checks cfg as client-go's elector would, so that a bad setting fails at start-up rather
// than in the background.
func New(cfg Config) (*Elector, error) {
	if cfg.Lead == nil || cfg.Leases == nil || cfg.Identity == "" || cfg.Namespace == "" || cfg.Name == "" {
		return nil, fmt.Errorf("leader election needs a lease client, a lease namespace and name, an identity and work to lead")
	}
	e := &Elector{cfg: cfg}
	if _, _, err := e.elector(context.Background()); err != nil {
		return nil, err
	}
	return e, nil
}

// Run campaigns until ctx ends, leading whenever it wins. When ctx ends it first ends the
// running term and waits for Lead to return, and only then gives the lease up, so that the next
// leader never overlaps this one; Run returns once the lease is released (or could not be).
func (e *Elector) Run(ctx context.Context) {
	// The campaign outlives ctx until the term has ended: releasing the lease is its last act.
	campaign, stopCampaign := context.WithCancel(context.WithoutCancel(ctx))
	defer stopCampaign()
	stop := context.AfterFunc(ctx, func() {
		e.mu.Lock()
		term := e.term
		e.mu.Unlock()
		if term != nil {
			<-term
		}
		stopCampaign()
	})
	defer stop()
	for campaign.Err() == nil {
		if err := e.runRound(ctx, campaign); err != nil {
			klog.ErrorS(err, "Leader election stopped")
			return
		}
	}
}

// runRound campaigns until it wins and then leads until the lease is lost or the campaign ends.
func (e *Elector) runRound(ctx, campaign context.Context) error {
	le, term, err := e.elector(ctx)
	if err != nil {
		return err
	}
	le.Run(campaign)
	if campaign.Err() != nil {
		// Either no term started, or Run's stop waited for it, or it starts after ctx ended and
		// does nothing.
		return nil
	}
	// The lease was lost: the term began (client-go starts it only once the lease is held) and
	// must be over before this replica campaigns again.
	<-term
	return nil
}

// elector builds client-go's elector for one round and the channel its term closes when Lead
// has returned.
func (e *Elector) elector(ctx context.Context) (*leaderelection.LeaderElector, chan struct{}, error) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.Name},
		Client:     e.cfg.Leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.cfg.Identity},
	}
	term := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   e.cfg.LeaseDuration,
		RenewDeadline:   e.cfg.RenewDeadline,
		RetryPeriod:     e.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            e.cfg.Namespace + "/" + e.cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				e.mu.Lock()
				e.term = term
				e.mu.Unlock()
				defer close(term)
				// A term won after ctx ended has nothing to do: the elector is about to release.
				if ctx.Err() != nil {
					return
				}
				termCtx, cancel := context.WithCancel(leading)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				klog.InfoS("Leading: starting the work", "lease", e.cfg.Namespace+"/"+e.cfg.Name, "identity", e.cfg.Identity)
				e.cfg.Lead(termCtx)
			},
			OnStoppedLeading: func() {
				klog.InfoS("Not leading", "lease", e.cfg.Namespace+"/"+e.cfg.Name, "identity", e.cfg.Identity)
			},
		},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("leader election on lease %s/%s: %w", e.cfg.Namespace, e.cfg.Name, err)
	}
	return le, term, nil
}
