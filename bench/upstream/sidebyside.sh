#!/usr/bin/env bash
# sidebyside.sh runs the same load against idplane and upstream's plane, alternated run by run
# (the order swapped every round), each run on a fresh plane, and prints every run's table with
# the round, the system, the key and the one-minute load average. See README.md.
#
#   bench/upstream/sidebyside.sh tokens [ROUNDS]   tokenload -sar, ES256 and RSA-2048 keys
#   bench/upstream/sidebyside.sh memory [ROUNDS]   memload, one run per system per round
#   bench/upstream/sidebyside.sh nodes  [ROUNDS]   nodesim -nodes 400, memory held per node
#
# It needs bin/idplane (README) and upstream's binaries (build.sh); ROUNDS defaults to 3.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
what=${1:?tokens, memory or nodes}
rounds=${2:-3}
export IDPLANE=${IDPLANE:-$root/bin/idplane}
[ -x "$IDPLANE" ] || { echo "sidebyside.sh: $IDPLANE is missing: build it (README) or set IDPLANE" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/sidebyside-XXXXXX")
plane=""
cleanup() {
	[ -n "$plane" ] && { kill "$plane" 2>/dev/null || true; wait "$plane" 2>/dev/null || true; }
	rm -rf "$work"
}
trap cleanup EXIT

for tool in tokenload memload nodesim; do
	go build -C "$root" -o "$work/$tool" "./bench/$tool"
done
# an RSA-2048 key for the RS256 runs, written by Go (no openssl needed)
mkdir "$work/genrsa"
cat >"$work/genrsa/main.go" <<'GO'
package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"log"
	"os"
)

func main() {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		log.Fatal(err)
	}
	pem.Encode(os.Stdout, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}
GO
(umask 077; go run "$work/genrsa/main.go" >"$work/rsa.key")

# start_upstream [plane.sh args]: a fresh upstream plane in the background; sets kubeconfig and
# logs, and plane to the script's pid.
start_upstream() {
	"$here/plane.sh" "$@" >"$work/plane.out" 2>&1 &
	plane=$!
	for _ in $(seq 180); do
		grep -q '^pids=' "$work/plane.out" && break
		kill -0 "$plane" 2>/dev/null || { cat "$work/plane.out" >&2; exit 1; }
		sleep 1
	done
	kubeconfig=$(sed -n 's/^kubeconfig=//p' "$work/plane.out")
	logs=$(sed -n 's/^logs=//p' "$work/plane.out")
	[ -n "$kubeconfig" ] || { cat "$work/plane.out" >&2; exit 1; }
}

# start_idplane DIR [server flags]: a fresh idplane server in the background; sets kubeconfig.
start_idplane() {
	local dir=$1
	shift
	"$IDPLANE" server --data-dir "$dir" --secure-port 0 "$@" >"$dir.log" 2>&1 &
	plane=$!
	for _ in $(seq 120); do
		[ -s "$dir/admin.kubeconfig" ] && break
		kill -0 "$plane" 2>/dev/null || { cat "$dir.log" >&2; exit 1; }
		sleep 0.5
	done
	kubeconfig=$dir/admin.kubeconfig
}

stop_plane() {
	kill "$plane" 2>/dev/null || true
	wait "$plane" 2>/dev/null || true
	plane=""
}

header() { echo "=== round=$1 system=$2 $3 load=$(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%T)"; }

for round in $(seq "$rounds"); do
	order="idplane upstream"
	[ $((round % 2)) = 0 ] && order="upstream idplane"
	case $what in
	tokens)
		for key in es256 rsa2048; do
			for sys in $order; do
				if [ "$sys" = idplane ]; then
					args=()
					[ "$key" = rsa2048 ] && args=(--service-account-signing-key-file "$work/rsa.key")
					rm -rf "$work/data"
					start_idplane "$work/data" "${args[@]}"
				else
					args=()
					[ "$key" = rsa2048 ] && args=(-k "$work/rsa.key")
					start_upstream "${args[@]}"
				fi
				sleep 5
				header "$round" "$sys" "key=$key"
				"$work/tokenload" -kubeconfig "$kubeconfig" -sar -concurrency 16 -count 10000
				stop_plane
			done
		done
		;;
	memory)
		for sys in $order; do
			header "$round" "$sys" "memload"
			if [ "$sys" = idplane ]; then
				"$work/memload" -idplane "$IDPLANE" -runs 1
			else
				"$work/memload" -plane "$here/plane.sh" -runs 1 -start-timeout 3m
			fi
		done
		;;
	nodes)
		for sys in $order; do
			header "$round" "$sys" "nodesim"
			if [ "$sys" = idplane ]; then
				"$work/nodesim" -idplane "$IDPLANE" -nodes 400 -duration 60s
			else
				start_upstream
				"$work/nodesim" -kubeconfig "$kubeconfig" -client-ca-cert "$logs/idplane/pki/ca.crt" \
					-client-ca-key "$logs/idplane/pki/ca.key" -nodes 400 -duration 60s
				stop_plane
			fi
		done
		;;
	*)
		echo "sidebyside.sh: unknown load $what (tokens, memory or nodes)" >&2
		exit 2
		;;
	esac
done
