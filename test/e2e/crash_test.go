package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestKilledServerKeepsAcknowledgedCreates kills a server (SIGKILL, embedded etcd inside it)
// while clients create config maps, restarts it on the same data directory and checks that
// every create it acknowledged is there, complete, and nothing else but what clients sent.
func TestKilledServerKeepsAcknowledgedCreates(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newAPIClient(t, s, kubectlTimeout)
	l := newLedger()

	// Enough creates for clients to be mid-request at the kill, few enough to stay quick.
	const clients, beforeKill = 8, 60
	var acked atomic.Int64
	enough, killed := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	stopClients := sync.OnceFunc(func() { close(killed); wg.Wait() })
	// Even when the test fails early, no client outlives it.
	defer stopClients()
	for i := range clients {
		wg.Go(func() {
			for j := 0; ; j++ {
				select {
				case <-killed:
					return
				default:
				}
				code, err := l.create(c, "default", fmt.Sprintf("c%d-%d", i, j))
				if code == 0 {
					// No answer: the server is gone.
					return
				}
				if code != http.StatusCreated {
					t.Errorf("client %d, create %d: %v", i, j, err)
					return
				}
				if acked.Add(1) == beforeKill {
					close(enough)
				}
			}
		})
	}
	select {
	case <-enough:
	case <-time.After(startTimeout):
		t.Fatalf("only %d creates acknowledged within %v", acked.Load(), startTimeout)
	}
	s.kill()
	stopClients()
	t.Logf("%d creates acknowledged before the kill", len(l.ackedNames()))

	s.start(t)
	l.verify(t, newAPIClient(t, s, kubectlTimeout), "default", "after the restart")
}
