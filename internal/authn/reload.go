package authn

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	"k8s.io/apiserver/pkg/server/options/authenticationconfig/metrics"
	"k8s.io/klog/v2"

	"github.com/idplane/idplane/internal/authn/jwt"
)

// Reload bounds, as upstream's: a file that does not change is still read once a minute, so an
// update whose issuers were not ready is tried again; one update waits up to a minute for them.
const (
	reloadPollInterval = time.Minute
	reloadTimeout      = time.Minute
)

// Reloader applies a changed AuthenticationConfiguration file without a restart. A new file
// that does not decode, does not validate or changes the anonymous section (which is read only
// at start) is refused; so is one whose new issuers cannot be discovered in time. A refused file
// is logged and counted (apiserver_authentication_config_controller_automatic_reloads_total
// {status="failure"}) and the configuration in use keeps serving.
type Reloader struct {
	path              string
	compiler          authenticationcel.Compiler
	disallowedIssuers []string
	apiServerID       string
	jwt               *jwt.Authenticator
	anonymous         *Anonymous

	mu sync.Mutex
	// seen is the content last decided on: applied, or refused for good (it cannot decode or
	// validate). A file refused because its issuers were not ready is tried again.
	seen string
}

// NewReloader returns the reloader of the file path, which the server started with as initial.
func NewReloader(path string, initial *FileConfig, compiler authenticationcel.Compiler, disallowedIssuers []string, apiServerID string, auth *jwt.Authenticator) *Reloader {
	metrics.RegisterMetrics()
	metrics.RecordAuthenticationConfigLastConfigInfo(apiServerID, initial.Data)
	return &Reloader{
		path: path, compiler: compiler, disallowedIssuers: disallowedIssuers, apiServerID: apiServerID,
		jwt: auth, anonymous: initial.Anonymous, seen: initial.Data,
	}
}

// Start watches the file's directory, which also sees editors that replace the file and the
// symlink swaps of a mounted ConfigMap, and reads the file on every change and once a minute,
// until ctx ends. The watch is in place when Start returns.
func (r *Reloader) Start(ctx context.Context) {
	events := make(chan struct{}, 1)
	watcher, err := fsnotify.NewWatcher()
	if err == nil {
		if err = watcher.Add(filepath.Dir(r.path)); err != nil {
			watcher.Close()
		}
	}
	if err != nil {
		// Polling alone still picks the change up, a minute later at most.
		klog.ErrorS(err, "Watching the authentication configuration file; falling back to polling", "path", r.path)
	} else {
		go func() {
			defer watcher.Close()
			forward(ctx, watcher, events)
		}()
	}
	go r.run(ctx, events)
}

func (r *Reloader) run(ctx context.Context, events <-chan struct{}) {
	tick := time.NewTicker(reloadPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-events:
		case <-tick.C:
		}
		// Refusals are logged and counted inside.
		_, _ = r.Reload(ctx)
	}
}

// forward turns the watcher's events into at most one pending signal: a burst of writes is read
// once, after it.
func forward(ctx context.Context, w *fsnotify.Watcher, events chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-w.Events:
			if !ok {
				return
			}
			select {
			case events <- struct{}{}:
			default:
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			klog.ErrorS(err, "Watching the authentication configuration file")
		}
	}
}

// Reload reads the file once and applies it if it changed. It reports whether a new
// configuration was applied and, when the file was refused, why.
func (r *Reloader) Reload(ctx context.Context) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	data, err := os.ReadFile(r.path)
	if err != nil {
		// Kept unseen: a file being replaced may be back on the next read.
		return false, r.refuse(fmt.Errorf("reading authentication configuration: %w", err))
	}
	if string(data) == r.seen {
		return false, nil
	}
	c, err := ParseConfig(data, r.compiler, r.disallowedIssuers)
	if err == nil && !reflect.DeepEqual(c.Anonymous, r.anonymous) {
		err = fmt.Errorf("invalid authentication configuration: anonymous: Forbidden: changed from initial configuration file")
	}
	if err != nil {
		// This content will never be valid: refuse it once, not on every poll.
		r.seen = string(data)
		return false, r.refuse(fmt.Errorf("%s: %w", r.path, err))
	}
	updateCtx, cancel := context.WithTimeout(ctx, reloadTimeout)
	defer cancel()
	if err := r.jwt.Update(updateCtx, c.JWT); err != nil {
		return false, r.refuse(fmt.Errorf("%s: %w", r.path, err))
	}
	r.seen = c.Data
	klog.InfoS("Reloaded authentication configuration", "path", r.path, "jwtIssuers", r.jwt.Issuers())
	metrics.RecordAuthenticationConfigAutomaticReloadSuccess(r.apiServerID, c.Data)
	return true, nil
}

func (r *Reloader) refuse(err error) error {
	klog.ErrorS(err, "Refused the new authentication configuration; the previous one keeps serving")
	metrics.RecordAuthenticationConfigAutomaticReloadFailure(r.apiServerID)
	return err
}
