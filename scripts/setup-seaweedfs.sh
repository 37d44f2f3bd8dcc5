#!/usr/bin/env bash
# Builds SeaweedFS (github.com/seaweedfs/seaweedfs, Apache-2.0), the S3-compatible object store the
# storage tests and bench:storage start (packages/testkit/src/s3-server.ts; docs/storage.md), from its
# Go module into a cache outside the repository, and skips the build while that binary is current.
#
#   bash scripts/setup-seaweedfs.sh          # scripts/setup.sh calls it
#   bash scripts/setup-seaweedfs.sh --print  # prints the binary's path (builds it first if missing)
#
# SEAWEEDFS_VERSION: the Go module version (default below; it reports itself as 4.53).
# SEAWEEDFS_CACHE: the cache directory (default ${XDG_CACHE_HOME:-$HOME/.cache}/tributary/seaweedfs);
# the binary goes to $SEAWEEDFS_CACHE/<version>/weed. SEAWEEDFS_SKIP=1 skips it (the s3 tests then
# fail with a message naming this script).
#
# `go install .../weed@version` refuses this module (its go.mod has replace directives), so the
# module source is copied out of the module cache and built with `go build` there. The build takes
# about 15 minutes of CPU on one core and gives a binary of about 230 MB.
set -euo pipefail

version="${SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
cache="${SEAWEEDFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tributary/seaweedfs}"
dir="$cache/$version"
bin="$dir/weed"

say() { printf '\033[1msetup-seaweedfs:\033[0m %s\n' "$*" >&2; }

if [[ "${SEAWEEDFS_SKIP:-0}" == 1 ]]; then
  say 'SEAWEEDFS_SKIP=1: skipped'
  exit 0
fi

if [[ -x "$bin" ]]; then
  say "$bin is current"
  [[ "${1:-}" == --print ]] && printf '%s\n' "$bin"
  exit 0
fi

if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v go >/dev/null; then
  if [[ $EUID -eq 0 ]]; then
    as_root=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as_root=(sudo)
  else
    say 'Go is required to build SeaweedFS: install it as root (apt-get install golang-go)'
    exit 1
  fi
  say 'installing golang-go'
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" apt-get install -y -qq --no-install-recommends golang-go ca-certificates
fi

mkdir -p "$cache"
# One build at a time (two test runs or setup runs on the same machine wait for each other).
exec 9>"$cache/.build.lock"
flock 9
if [[ -x "$bin" ]]; then
  say "$bin was built meanwhile"
  [[ "${1:-}" == --print ]] && printf '%s\n' "$bin"
  exit 0
fi

say "downloading github.com/seaweedfs/seaweedfs@$version"
src="$(GOFLAGS=-mod=mod go mod download -json "github.com/seaweedfs/seaweedfs@$version" |
  sed -n 's/^[[:space:]]*"Dir":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p')"
[[ -n "$src" && -d "$src" ]] || {
  say "go mod download gave no source directory for $version"
  exit 1
}

tmp="$(mktemp -d "$cache/build.XXXXXX")"
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
say "building weed from $src (about 15 minutes of CPU)"
cp -R "$src" "$tmp/src"
chmod -R u+w "$tmp/src"
(cd "$tmp/src" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -o "$tmp/weed" ./weed)
mkdir -p "$dir"
mv "$tmp/weed" "$bin"
say "built $bin ($("$bin" version 2>/dev/null | head -n1 || true))"
[[ "${1:-}" == --print ]] && printf '%s\n' "$bin"
exit 0
