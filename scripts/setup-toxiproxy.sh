#!/usr/bin/env bash
# Builds Toxiproxy (github.com/Shopify/toxiproxy, MIT), the TCP proxy the WAN harness puts between
# sites (packages/testkit/src/wan*.ts, bench:wan, the replication fault tests; docs/wan.md), from its
# Go module into .data/tools/toxiproxy, and skips the build while that binary is the pinned version.
#
#   bash scripts/setup-toxiproxy.sh          # scripts/setup.sh calls it
#
# TOXIPROXY_VERSION: the module version (default v2.5.0). TOXIPROXY_DIR: where the binary goes
# (default .data/tools/toxiproxy). Needs Go 1.17 or later: when `go` is missing it installs Debian's
# golang-go (as root or with sudo). The module comes from the Go module proxy (about 30 s to build).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="${TOXIPROXY_VERSION:-v2.5.0}"
dir="${TOXIPROXY_DIR:-$root/.data/tools/toxiproxy}"
bin="$dir/toxiproxy-server"

say() { printf '\033[1msetup-toxiproxy:\033[0m %s\n' "$*"; }

if [[ -x "$bin" && -f "$dir/.version" && "$(cat "$dir/.version")" == "$version" ]]; then
  say "$bin ($version) is current"
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
    say 'Go is required to build Toxiproxy: install it as root (apt-get install golang-go)' >&2
    exit 1
  fi
  say 'installing golang-go'
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" apt-get install -y -qq --no-install-recommends golang-go ca-certificates
fi

say "building github.com/Shopify/toxiproxy/v2/cmd/server@$version into $dir"
mkdir -p "$dir"
tmp="$(mktemp -d "$dir.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp" GOFLAGS=-mod=mod CGO_ENABLED=0 go install "github.com/Shopify/toxiproxy/v2/cmd/server@$version"
mv "$tmp/server" "$bin"
printf '%s\n' "$version" >"$dir/.version"
say "built $bin"
