// Package snapshot saves and restores what an idplane control plane cannot lose: a consistent
// etcd snapshot, taken with etcd's own snapshot API, together with the data directory's pki/
// (the CA and signer keys, the service-account key, the encryption configuration), in one
// archive (package archive) with a manifest of hashes; and it runs scheduled snapshots with
// retention.
package snapshot
