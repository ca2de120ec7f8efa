#!/usr/bin/env bash
# Regenerates the DeepCopy functions (zz_generated.deepcopy.go) of idplane's own API packages,
# which every runtime.Object needs. Run it whenever a type under api/ changes, then
# hack/update-openapi.sh.
set -euo pipefail

API_PKGS=(
  github.com/idplane/idplane/api/windows/v1
  github.com/idplane/idplane/api/windows/v1alpha1
  github.com/idplane/idplane/api/node/v1alpha1
)

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

# k8s.io/code-generator is released in lockstep with k8s.io/apimachinery: the generator of the
# same release writes code for the runtime.Object interfaces the server is built with.
CODEGEN_VERSION="$(go list -m -f '{{.Version}}' k8s.io/apimachinery)"

for pkg in "${API_PKGS[@]}"; do
  rm -f "${pkg#github.com/idplane/idplane/}/zz_generated.deepcopy.go"
done

# go run pkg@version builds the generator from its own module, leaving go.mod alone.
go run "k8s.io/code-generator/cmd/deepcopy-gen@${CODEGEN_VERSION}" \
  --output-file zz_generated.deepcopy.go \
  --go-header-file hack/boilerplate.go.txt \
  "${API_PKGS[@]}"
