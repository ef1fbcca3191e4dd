#!/usr/bin/env bash
# Builds ./bin/stoatctl, stamped with a version and a commit:
#   STOATCTL_VERSION, else the tag at HEAD, else the module version;
#   STOATCTL_COMMIT, else `git rev-parse --short HEAD` ("-dirty" when the
#   tracked files differ from HEAD), else what the Go toolchain knows.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
find_go
# The RocksDB state stores link RocksDB's C library (cgo); a build with
# CGO_ENABLED=0 needs neither and has the in-memory stores only.
if [[ $(go env CGO_ENABLED) == 1 ]]; then
	need_pkg g++ librocksdb-dev || die "building with cgo needs g++ and librocksdb-dev (or build with CGO_ENABLED=0: in-memory state only)"
fi

version=${STOATCTL_VERSION:-}
commit=${STOATCTL_COMMIT:-}
if command -v git >/dev/null 2>&1 && git rev-parse --git-dir >/dev/null 2>&1; then
	if [[ -z $commit ]] && commit=$(git rev-parse --short HEAD 2>/dev/null); then
		git diff --quiet HEAD -- 2>/dev/null || commit+="-dirty"
	fi
	[[ -n $version ]] || version=$(git describe --tags --exact-match 2>/dev/null || true)
fi

ldflags=()
[[ -z $version ]] || ldflags+=("-X main.version=$version")
[[ -z $commit ]] || ldflags+=("-X main.commit=$commit")

mkdir -p bin
# -buildvcs=false: the stamp above replaces VCS stamping, which fails when
# git is missing or refuses a checkout owned by another user.
go build -buildvcs=false -ldflags "${ldflags[*]}" -o bin/stoatctl .
echo "built bin/stoatctl (version ${version:-from module}, commit ${commit:-unknown})" >&2
