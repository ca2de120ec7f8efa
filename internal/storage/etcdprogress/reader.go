// Package etcdprogress tells how far the store has gone: its current revision and, for chosen
// key prefixes, the highest modification revision among the keys that exist under each. A
// reader applying a prefix's writes in order has seen the last write of every existing key once
// it reaches that revision. Deletes do not count, since a reader that missed one (an informer
// that saw it only through a relist, say) is never told its revision.
//
// It holds nothing between reads and watches nothing: each answer is one etcd transaction that
// lists keys only, which etcd serves from its in-memory index, walking every key of a prefix it
// is asked about. So callers ask only about prefixes they know to be small.
package etcdprogress

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxKeys bounds the keys a read lists under one prefix, for a caller that took a large prefix
// for a small one: that prefix is answered with the store's revision, which bounds every key's.
const maxKeys = 10_000

// Reader answers for named key prefixes.
type Reader struct {
	kv       clientv3.KV
	prefixes map[string]string
	limit    int64
}

// NewReader reads prefixes (name → key prefix) through kv.
func NewReader(kv clientv3.KV, prefixes map[string]string) *Reader {
	return &Reader{kv: kv, prefixes: prefixes, limit: maxKeys}
}

// LatestRevisions returns the store's current revision and, for each prefix named, the highest
// modification revision among its keys, 0 when it has none; all read at one revision.
func (r *Reader) LatestRevisions(ctx context.Context, names []string) (current int64, latest map[string]int64, err error) {
	ops := make([]clientv3.Op, len(names))
	for i, name := range names {
		prefix, ok := r.prefixes[name]
		if !ok {
			return 0, nil, fmt.Errorf("no key prefix for %q", name)
		}
		ops[i] = clientv3.OpGet(prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(r.limit))
	}
	resp, err := r.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return 0, nil, fmt.Errorf("reading the store's revisions: %w", err)
	}
	current = resp.Header.Revision
	latest = make(map[string]int64, len(names))
	for i, name := range names {
		keys := resp.Responses[i].GetResponseRange()
		if keys.More {
			latest[name] = current
			continue
		}
		var rev int64
		for _, kv := range keys.Kvs {
			rev = max(rev, kv.ModRevision)
		}
		latest[name] = rev
	}
	return current, latest, nil
}
