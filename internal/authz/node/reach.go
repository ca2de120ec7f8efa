package node

import (
	"encoding/binary"
	"hash/maphash"
	"sync/atomic"
)

// reachShards spreads the pairs over tables small enough that rebuilding one is quick.
const reachShards = 256

// reachSet holds every (node, object) pair with a path between them, each with the number
// of paths. Decisions read it without locks and without writing to memory: a writer that
// changes one node's pairs must not slow down readers of other nodes, which a lock word or
// a map's element count, written on every change and read by every lookup, would do by
// moving its cache line between cores on each change.
//
// Each shard is an open-addressing table with linear probing, its keys' bytes kept end to
// end in an arena beside it. A slot goes from empty to live to removed and never back, and
// arena bytes once written never change, so what a slot's state publishes never changes
// under a reader. Writers, serialized by the graph's lock, fill empty slots, append keys
// and mark removed slots; when the slots or the arena fill up they publish a fresh table
// holding only the live pairs, and readers still holding the old one see a consistent set.
// Slots and arena hold no pointers, so the garbage collector does not scan them.
type reachSet struct {
	seed   maphash.Seed
	shards [reachShards]atomic.Pointer[reachTable]
	// use counts, per shard, what its current table has used. Only writers touch it; it
	// lives apart from the tables so that counting does not disturb readers' cache lines.
	use [reachShards]tableUse
	// live counts the pairs in every shard, for the graph's size metric; only writers touch it.
	live int
}

// tableUse counts a table's live slots, its used (live or removed) slots, and the arena
// bytes written.
type tableUse struct {
	live, used, arena int
}

// reachTable is one shard's table. Readers read its fields, which never change once it is
// published; writers also change its slots, arena and paths beyond what readers look at.
type reachTable struct {
	slots []reachSlot
	mask  uint64
	arena []byte
	// paths counts the paths to each slot's pair; only writers use it.
	paths []int32
}

// Slot states; a live slot's state also holds the kind of its object, so that one load
// both publishes the slot and checks the kind.
const (
	slotEmpty uint32 = iota
	slotRemoved
	slotLive
)

func liveState(k kind) uint32 { return slotLive | uint32(k)<<8 }

// reachSlot is one pair in 16 bytes, four to a cache line. Its key, at offset in the
// arena, is the lengths of the node's name, the namespace and the name, then the three end
// to end. The low half of its hash places it again when the table is rebuilt.
type reachSlot struct {
	state       atomic.Uint32
	fingerprint uint32
	offset      uint32
	lowHash     uint32
}

const (
	minTableSize = 16
	minArenaSize = 256
)

func newReachSet() *reachSet {
	s := &reachSet{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].Store(newReachTable(minTableSize, minArenaSize))
	}
	return s
}

func newReachTable(size, arena int) *reachTable {
	return &reachTable{
		slots: make([]reachSlot, size),
		mask:  uint64(size - 1),
		arena: make([]byte, arena),
		paths: make([]int32, size),
	}
}

// mix combines the hashes of a key's parts. The result picks the shard with its top byte,
// the slot with its low bits, and the fingerprint with the bits between.
func mix(name, namespace, node uint64) uint64 {
	h := (name*0x9e3779b97f4a7c15 ^ namespace) * 0xc2b2ae3d27d4eb4f
	h = (h ^ node) * 0x165667b19e3779f9
	return h ^ h>>29
}

func (s *reachSet) hash(node, namespace, name string) uint64 {
	return mix(maphash.String(s.seed, name), maphash.String(s.seed, namespace), maphash.String(s.seed, node))
}

func shardOf(h uint64) int          { return int(h >> 56) }
func fingerprintOf(h uint64) uint32 { return uint32(h >> 24) }

// parts returns the slot's key split into node, namespace and name, and its size in the
// arena.
func (t *reachTable) parts(sl *reachSlot) (node, namespace, name []byte, size int) {
	key := t.arena[sl.offset:]
	n, w1 := binary.Uvarint(key)
	ns, w2 := binary.Uvarint(key[w1:])
	nm, w3 := binary.Uvarint(key[w1+w2:])
	o := w1 + w2 + w3
	node, namespace, name = key[o:o+int(n)], key[o+int(n):o+int(n+ns)], key[o+int(n+ns):o+int(n+ns+nm)]
	return node, namespace, name, o + int(n+ns+nm)
}

func (t *reachTable) holds(sl *reachSlot, node, namespace, name string) bool {
	n, ns, nm, _ := t.parts(sl)
	return string(nm) == name && string(ns) == namespace && string(n) == node
}

// keySize is the arena bytes a key takes.
func keySize(node, namespace, name int) int {
	return uvarintLen(node) + uvarintLen(namespace) + uvarintLen(name) + node + namespace + name
}

func uvarintLen(n int) int {
	size := 1
	for ; n >= 0x80; n >>= 7 {
		size++
	}
	return size
}

// has reports whether node has a path to the object. It takes no lock and writes nothing.
func (s *reachSet) has(node string, k kind, namespace, name string) bool {
	h := s.hash(node, namespace, name)
	fp, want := fingerprintOf(h), liveState(k)
	t := s.shards[shardOf(h)].Load()
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		sl := &t.slots[i]
		switch sl.state.Load() {
		case slotEmpty:
			return false
		case want:
			if sl.fingerprint == fp && t.holds(sl, node, namespace, name) {
				return true
			}
		}
	}
}

// addLocked changes the number of paths from node to the object by delta, adding the pair
// when it gains its first path and removing it when it loses its last, and reports which of
// those happened: +1 the pair appeared, -1 it went, 0 neither. The caller holds the graph's
// write lock.
func (s *reachSet) addLocked(node string, key objKey, delta int32) int {
	h := s.hash(node, key.namespace, key.name)
	fp, want := fingerprintOf(h), liveState(key.kind)
	sh := shardOf(h)
	t, use := s.shards[sh].Load(), &s.use[sh]
	i := h & t.mask
	for ; ; i = (i + 1) & t.mask {
		sl := &t.slots[i]
		state := sl.state.Load()
		if state == slotEmpty {
			break
		}
		if state != want || sl.fingerprint != fp || !t.holds(sl, node, key.namespace, key.name) {
			continue
		}
		if t.paths[i] += delta; t.paths[i] <= 0 {
			sl.state.Store(slotRemoved)
			use.live--
			s.live--
			return -1
		}
		return 0
	}
	if delta <= 0 {
		return 0
	}
	size := keySize(len(node), len(key.namespace), len(key.name))
	if (use.used+1)*4 > len(t.slots)*3 || use.arena+size > len(t.arena) {
		t = t.rebuilt(use, size)
		s.shards[sh].Store(t)
		i = t.emptySlot(uint64(uint32(h)))
	}
	fill(t, use, i, uint32(h), fp, delta, want, node, key.namespace, key.name)
	s.live++
	return 1
}

// eachLocked calls fn with every live pair of kind k. The caller holds the graph's lock.
func (s *reachSet) eachLocked(k kind, fn func(node, namespace, name string)) {
	want := liveState(k)
	for sh := range s.shards {
		t := s.shards[sh].Load()
		for i := range t.slots {
			if sl := &t.slots[i]; sl.state.Load() == want {
				node, namespace, name, _ := t.parts(sl)
				fn(string(node), string(namespace), string(name))
			}
		}
	}
}

// emptySlot is where a pair whose hash has lowHash goes in a table that does not hold it.
func (t *reachTable) emptySlot(lowHash uint64) uint64 {
	i := lowHash & t.mask
	for t.slots[i].state.Load() != slotEmpty {
		i = (i + 1) & t.mask
	}
	return i
}

// fill writes a pair into empty slot i, its key into the arena, and publishes it.
func fill[K string | []byte](t *reachTable, use *tableUse, i uint64, lowHash, fp uint32, paths int32, state uint32, node, namespace, name K) {
	o := use.arena
	key := binary.AppendUvarint(t.arena[o:o], uint64(len(node)))
	key = binary.AppendUvarint(key, uint64(len(namespace)))
	key = binary.AppendUvarint(key, uint64(len(name)))
	key = append(key, node...)
	key = append(key, namespace...)
	key = append(key, name...)
	use.arena += len(key)
	use.live++
	use.used++
	t.paths[i] = paths
	sl := &t.slots[i]
	sl.fingerprint, sl.offset, sl.lowHash = fp, uint32(o), lowHash
	sl.state.Store(state)
}

// rebuilt returns a table with t's live pairs and room for as many again, or at least for
// a key of extra bytes: at most half its slots and arena used, so that probes stay short
// and a lookup for an absent pair soon meets an empty slot. It resets use to the new
// table's.
func (t *reachTable) rebuilt(use *tableUse, extra int) *reachTable {
	size := minTableSize
	for size < (use.live+1)*2 {
		size *= 2
	}
	keyBytes := 0
	for i := range t.slots {
		if sl := &t.slots[i]; sl.state.Load() >= slotLive {
			_, _, _, n := t.parts(sl)
			keyBytes += n
		}
	}
	fresh := newReachTable(size, max(minArenaSize, 2*(keyBytes+extra)))
	*use = tableUse{}
	for i := range t.slots {
		old := &t.slots[i]
		state := old.state.Load()
		if state < slotLive {
			continue
		}
		node, namespace, name, _ := t.parts(old)
		fill(fresh, use, fresh.emptySlot(uint64(old.lowHash)), old.lowHash, old.fingerprint, t.paths[i], state, node, namespace, name)
	}
	return fresh
}
