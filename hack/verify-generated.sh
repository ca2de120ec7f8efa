#!/usr/bin/env bash
# Fails when a generated file differs from what its generator writes now: runs every
# hack/update-*.sh and asks git whether anything changed or appeared.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "$(git status --porcelain)" ]; then
	echo "verify-generated needs a clean work tree: it judges what the generators change" >&2
	exit 1
fi
hack/update-deepcopy.sh
hack/update-openapi.sh
changed=$(git status --porcelain)
if [ -n "$changed" ]; then
	echo "generated files are out of date; run hack/update-deepcopy.sh and hack/update-openapi.sh:" >&2
	echo "$changed" >&2
	git diff --stat >&2
	exit 1
fi
