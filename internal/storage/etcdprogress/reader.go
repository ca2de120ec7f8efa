// Package etcdprogress tells, for chosen key prefixes, a revision that a reader applying the
// prefix's writes in order must reach to have seen the last write of every key that exists under
// it now. Deletes do not count, since a reader that missed one (an informer that saw it only
// through a relist, say) is never told its revision.
//
// It holds nothing between reads and watches nothing: each answer is one etcd transaction that
// lists at most a bounded number of keys per prefix, keys only, which etcd serves from its
// in-memory index.
package etcdprogress

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// exactKeys bounds the keys a read lists under one prefix. A prefix holding no more is answered
// exactly: the highest modification revision among its keys, 0 when it has none. A larger one
// is answered with the store's revision, which bounds every key's: etcd cannot sort or filter by
// revision without a pass over every key of the prefix (at 150,000 keys, longer than a refusal
// may wait), and a resource with that many objects is written often enough for a reader
// following it to pass the store's revision at once.
const exactKeys = 1000

// Reader answers for named key prefixes.
type Reader struct {
	kv       clientv3.KV
	names    []string
	prefixes []string
	limit    int64
}

// NewReader reads prefixes (name → key prefix) through kv.
func NewReader(kv clientv3.KV, prefixes map[string]string) *Reader {
	return newReader(kv, prefixes, exactKeys)
}

func newReader(kv clientv3.KV, prefixes map[string]string, limit int64) *Reader {
	r := &Reader{kv: kv, limit: limit}
	for name, prefix := range prefixes {
		r.names = append(r.names, name)
		r.prefixes = append(r.prefixes, prefix)
	}
	return r
}

// LatestRevisions returns, per name, the revision a reader of that prefix must reach (see the
// package comment), all read at one store revision.
func (r *Reader) LatestRevisions(ctx context.Context) (map[string]int64, error) {
	ops := make([]clientv3.Op, len(r.prefixes))
	for i, prefix := range r.prefixes {
		ops[i] = clientv3.OpGet(prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(r.limit))
	}
	resp, err := r.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, fmt.Errorf("reading the store's revisions: %w", err)
	}
	latest := make(map[string]int64, len(r.names))
	for i, name := range r.names {
		keys := resp.Responses[i].GetResponseRange()
		if keys.More {
			latest[name] = resp.Header.Revision
			continue
		}
		var rev int64
		for _, kv := range keys.Kvs {
			rev = max(rev, kv.ModRevision)
		}
		latest[name] = rev
	}
	return latest, nil
}
