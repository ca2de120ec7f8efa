#!/usr/bin/env bash
# plane.sh starts a fresh upstream Kubernetes control plane (etcd, kube-apiserver,
# kube-controller-manager) on loopback, for side-by-side runs of the bench tools against
# idplane on the same machine. See README.md next to it.
#
#   bench/upstream/plane.sh [-k SIGNING_KEY] [-- EXTRA kube-apiserver FLAGS]
#
# It prints "kubeconfig=<path>" and "pids=<etcd>,<kube-apiserver>,<kube-controller-manager>"
# once the API server is ready, then waits; SIGTERM or SIGINT stops the plane and removes its
# directory. The binaries are built by build.sh (UPSTREAM_BIN, default ~/.cache/idplane-upstream/bin).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=${UPSTREAM_BIN:-$HOME/.cache/idplane-upstream/bin}
idplane=${IDPLANE:-$here/../../bin/idplane}
key=""
while [ $# -gt 0 ]; do
	case $1 in
	-k) key=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "plane.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
for b in etcd kube-apiserver kube-controller-manager; do
	[ -x "$bin/$b" ] || { echo "plane.sh: $bin/$b is missing: run bench/upstream/build.sh" >&2; exit 1; }
done
[ -x "$idplane" ] || { echo "plane.sh: $idplane is missing: build it (README) or set IDPLANE" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/upstream-plane-XXXXXX")
pids=()
stop() {
	local rc=$?
	trap - EXIT INT TERM
	if [ "$rc" != 0 ]; then
		for f in "$dir"/*.log; do [ -f "$f" ] && { echo "== $f" >&2; tail -n 20 "$f" >&2; }; done
	fi
	# Last started, first stopped: kube-apiserver drains its requests while etcd still answers.
	# Whatever has not exited 15 s after its signal is killed.
	local i p
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		p=${pids[i]}
		kill "$p" 2>/dev/null || continue
		for _ in $(seq 150); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$dir"
}
trap stop EXIT
trap 'exit 0' INT TERM

# The PKI is idplane's own: its first start writes a CA, a serving certificate for 127.0.0.1
# and an admin client certificate in system:masters, which kube-apiserver accepts as they are.
"$idplane" server --data-dir "$dir/idplane" --secure-port 0 >"$dir/idplane.log" 2>&1 &
ipid=$!
for _ in $(seq 600); do [ -s "$dir/idplane/admin.kubeconfig" ] && break; sleep 0.1; done
kill "$ipid" 2>/dev/null || true
wait "$ipid" 2>/dev/null || true
pki=$dir/idplane/pki
[ -s "$pki/admin.crt" ] || { echo "plane.sh: idplane wrote no PKI (log: $dir/idplane.log)" >&2; exit 1; }
[ -n "$key" ] || key=$pki/sa.key

# Free loopback ports: a port nothing answers on (etcd and kube-apiserver take no port 0).
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 30000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}
etcd_port=$(free_port) peer_port=$(free_port) api_port=$(free_port)

"$bin/etcd" --data-dir "$dir/etcd" --name plane \
	--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
	--listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
	--initial-cluster "plane=http://127.0.0.1:$peer_port" --log-level warn >"$dir/etcd.log" 2>&1 &
pids+=($!)

# kubeadm's flags, minus what needs a node: Node and RBAC authorization, NodeRestriction,
# service-account tokens signed with the given key.
"$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
	--bind-address 127.0.0.1 --secure-port "$api_port" \
	--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
	--client-ca-file "$pki/ca.crt" \
	--authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
	--service-account-issuer "https://127.0.0.1:$api_port" \
	--service-account-key-file "$key" --service-account-signing-key-file "$key" \
	--service-cluster-ip-range 10.96.0.0/12 "$@" >"$dir/kube-apiserver.log" 2>&1 &
pids+=($!)

kubeconfig=$dir/admin.kubeconfig
sed -E "s#server: https://127.0.0.1:[0-9]+#server: https://127.0.0.1:$api_port#" \
	"$dir/idplane/admin.kubeconfig" >"$kubeconfig"
ready=""
for _ in $(seq 1200); do
	if curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
		"https://127.0.0.1:$api_port/readyz" >/dev/null 2>&1; then ready=1; break; fi
	kill -0 "${pids[1]}" 2>/dev/null || break
	sleep 0.1
done
[ -n "$ready" ] || { echo "plane.sh: kube-apiserver not ready (log: $dir/kube-apiserver.log)" >&2; exit 1; }

"$bin/kube-controller-manager" --kubeconfig "$kubeconfig" \
	--authentication-kubeconfig "$kubeconfig" --authorization-kubeconfig "$kubeconfig" \
	--bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
	--use-service-account-credentials --service-account-private-key-file "$key" \
	--root-ca-file "$pki/ca.crt" --cluster-signing-cert-file "$pki/ca.crt" \
	--cluster-signing-key-file "$pki/ca.key" --controllers '*' >"$dir/kube-controller-manager.log" 2>&1 &
pids+=($!)

echo "kubeconfig=$kubeconfig"
echo "pids=$(IFS=,; echo "${pids[*]}")"
echo "logs=$dir"
wait -n "${pids[@]}" || true
echo "plane.sh: a process of the plane exited (logs: $dir)" >&2
exit 1
