#!/usr/bin/env bash
# build.sh builds upstream Kubernetes's kube-apiserver and kube-controller-manager, and an etcd
# server, from the Go module proxy into UPSTREAM_BIN (default ~/.cache/idplane-upstream/bin),
# outside the repository: they are for side-by-side runs only, never part of idplane.
#
#   bench/upstream/build.sh [KUBERNETES_VERSION [ETCD_VERSION]]   (default v1.36.3 v3.6.16)
#
# k8s.io/kubernetes's go.mod points its staging modules (k8s.io/api, client-go, ...) at
# directories its module zip does not hold; the build points them at the published v0.X.Y
# modules of the same release instead.
set -euo pipefail
export GOWORK=off GOFLAGS=-mod=mod

kube=${1:-v1.36.3}
etcd=${2:-v3.6.16}
bin=${UPSTREAM_BIN:-$HOME/.cache/idplane-upstream/bin}
mkdir -p "$bin"
work=$(mktemp -d "${TMPDIR:-/tmp}/upstream-build-XXXXXX")
trap 'rm -rf "$work"' EXIT

staging=v0.${kube#v1.}
src=$(cd "$work" && go mod download -json "k8s.io/kubernetes@$kube" | sed -nE 's/^\s*"Dir": "(.*)",?$/\1/p')
[ -d "$src" ] || { echo "build.sh: k8s.io/kubernetes@$kube not downloaded" >&2; exit 1; }
cp -r "$src" "$work/kubernetes"
chmod -R u+w "$work/kubernetes"
cd "$work/kubernetes"
sed -i -E "s#^(\s+)(k8s.io/[a-z0-9-]+) => ./staging/src/k8s.io/[a-z0-9-]+#\1\2 => \2 $staging#" go.mod
# what `kubectl version` and the emulation version read; a module build does not stamp them
minor=${kube#v1.}; minor=${minor%%.*}
v=k8s.io/component-base/version
version="-X $v.gitVersion=$kube -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
for cmd in kube-apiserver kube-controller-manager; do
	echo "building $cmd $kube" >&2
	go build -o "$bin/$cmd" -ldflags "$version" "./cmd/$cmd"
done

mkdir "$work/etcd"
cd "$work/etcd"
cat >main.go <<'GO'
// etcd server, as the etcd binary runs it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
# quiet unless they fail
if ! { go mod init upstream-etcd && go get "go.etcd.io/etcd/server/v3@$etcd" && go mod tidy; } >"$work/etcd.log" 2>&1; then
	cat "$work/etcd.log" >&2
	exit 1
fi
echo "building etcd $etcd" >&2
go build -o "$bin/etcd" .
echo "$bin: etcd kube-apiserver kube-controller-manager" >&2
