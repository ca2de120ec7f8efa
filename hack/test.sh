#!/usr/bin/env bash
# The project's test command (README.md, .ci/run). Unit-test packages run with the race detector;
# the packages that start whole servers (in-process or as processes driven by kubectl) run without
# it, since instrumenting the API server library and etcd would triple their time on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."

server_pkgs=(./internal/apiserver/ ./test/e2e/)
mapfile -t unit_pkgs < <(go list ./... | grep -v -e '/internal/apiserver$' -e '/test/e2e$')

go test -timeout 60m -race "${unit_pkgs[@]}"
go test -timeout 60m "${server_pkgs[@]}"
# Fuzz the decoding of untrusted certificate requests and certificates for a bounded time.
go test -run '^$' -fuzz FuzzCertificateSigningRequestPEM -fuzztime 15s ./internal/validation/
go test -run '^$' -fuzz FuzzPolicies -fuzztime 10s ./internal/certificates/
