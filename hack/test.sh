#!/usr/bin/env bash
# The project's test command (README.md, .ci/run). Unit-test packages run with the race detector;
# the packages that start whole servers (in-process or as processes driven by kubectl) run without
# it, since instrumenting the API server library and etcd would triple their time on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t unit_pkgs < <(go list ./... | grep -v -e '/internal/apiserver$' -e '/test/e2e$')

go test -timeout 60m -race "${unit_pkgs[@]}"
go test -timeout 60m ./internal/apiserver/
# The e2e tests build the binary they drive, which Go's test cache cannot see: never cache them.
go test -count=1 -timeout 60m ./test/e2e/
# Fuzz the decoding of untrusted certificate requests and certificates, the signers' rules, the
# service-account and bootstrap token authenticators, TokenRequest validation, Windows user names, GMSA
# credential spec documents and their comparison, and the GMSA webhook's decoding of
# AdmissionReviews, for a bounded time.
go test -run '^$' -fuzz FuzzCertificateSigningRequestPEM -fuzztime 15s ./internal/validation/
go test -run '^$' -fuzz FuzzPolicies -fuzztime 10s ./internal/certificates/
go test -run '^$' -fuzz FuzzAuthenticateToken -fuzztime 15s ./internal/serviceaccount/
go test -run '^$' -fuzz FuzzAuthenticateToken -fuzztime 10s ./internal/authn/bootstraptoken/
go test -run '^$' -fuzz FuzzAuthenticateToken -fuzztime 10s ./internal/authn/jwt/
# The cluster-info a joining agent reads from a server it has not verified yet.
go test -run '^$' -fuzz FuzzVerify -fuzztime 10s ./internal/clusterinfo/
go test -run '^$' -fuzz FuzzValidateTokenRequest -fuzztime 10s ./internal/validation/
go test -run '^$' -fuzz FuzzPodCertificateRequest -fuzztime 10s ./internal/validation/
# The certificate chains a signer hands the agent for a pod.
go test -run '^$' -fuzz FuzzAcceptChain -fuzztime 10s ./internal/agent/podcerts/
go test -run '^$' -fuzz FuzzCredSpecEqual -fuzztime 10s ./internal/gmsa/
go test -run '^$' -fuzz FuzzRunAsUserName -fuzztime 10s ./internal/validation/
go test -run '^$' -fuzz FuzzValidateGMSACredSpecDocument -fuzztime 10s ./internal/validation/
go test -run '^$' -fuzz FuzzAdmissionReviewDecode -fuzztime 10s ./internal/gmsa/webhook/
# The snapshot archives a restore reads (a backup store may have been tampered with). Minimizing
# their kilobyte-sized inputs would take the whole run, hence -fuzzminimizetime.
go test -run '^$' -fuzz FuzzReadArchive -fuzztime 10s -fuzzminimizetime 1s ./internal/snapshot/archive/
