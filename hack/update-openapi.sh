#!/usr/bin/env bash
# Regenerates internal/generated/openapi from the Go API types idplane serves.
# The OpenAPI definitions feed /openapi/v2 and /openapi/v3, kubectl explain,
# kubectl's client-side validation and the server-side apply type converter,
# so they must be regenerated whenever an API package changes.
set -euo pipefail

# API packages that get OpenAPI definitions.
API_PKGS=(
  k8s.io/api/core/v1
  k8s.io/api/coordination/v1
  k8s.io/api/policy/v1
  k8s.io/api/authentication/v1
  k8s.io/api/authorization/v1
  k8s.io/api/rbac/v1
  k8s.io/api/certificates/v1
  k8s.io/api/certificates/v1beta1
  k8s.io/api/storage/v1
  k8s.io/api/discovery/v1
  k8s.io/api/flowcontrol/v1
  k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1
  k8s.io/apimachinery/pkg/apis/meta/v1
  k8s.io/apimachinery/pkg/runtime
  k8s.io/apimachinery/pkg/version
  k8s.io/apimachinery/pkg/api/resource
  k8s.io/apimachinery/pkg/util/intstr
)
# idplane's own API packages: not read-only, since openapi-gen writes their OpenAPIModelName
# methods (zz_generated.model_name.go) next to the types.
OWN_API_PKGS=(
  github.com/idplane/idplane/api/windows/v1
  github.com/idplane/idplane/api/windows/v1alpha1
  github.com/idplane/idplane/api/node/v1alpha1
)

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

OUTPUT_DIR=internal/generated/openapi
OUTPUT_PKG=github.com/idplane/idplane/${OUTPUT_DIR}

# Use the generator from the same kube-openapi the server links against, so
# the generated code matches the common/spec packages it is compiled with.
KUBE_OPENAPI_VERSION="$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)"

GEN_BIN_DIR="$(mktemp -d)"
trap 'rm -rf "${GEN_BIN_DIR}"' EXIT
# Installing from outside the repo keeps the generator's own dependencies out of go.mod.
(cd "${GEN_BIN_DIR}" && GOBIN="${GEN_BIN_DIR}" go install "k8s.io/kube-openapi/cmd/openapi-gen@${KUBE_OPENAPI_VERSION}")

readonly_flags=()
for pkg in "${API_PKGS[@]}"; do
  readonly_flags+=(--readonly-pkg "${pkg}")
done

# Stale output from removed types must not survive a regeneration.
rm -f "${OUTPUT_DIR}"/zz_generated.*.go
mkdir -p "${OUTPUT_DIR}"

"${GEN_BIN_DIR}/openapi-gen" \
  --output-dir "${OUTPUT_DIR}" \
  --output-pkg "${OUTPUT_PKG}" \
  --output-file zz_generated.openapi.go \
  --output-model-name-file zz_generated.model_name.go \
  --go-header-file hack/boilerplate.go.txt \
  --report-filename hack/api-violations.list \
  "${readonly_flags[@]}" \
  "${API_PKGS[@]}" "${OWN_API_PKGS[@]}"
