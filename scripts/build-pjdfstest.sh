#!/usr/bin/env bash
# Builds pjdfstest (the POSIX file-system test suite, ../shared/tools/pjdfstest) into a build
# directory of its own, outside the source (which may be read-only) and outside any file system
# under test. The mount's pjdfstest run (apps/agent/src/mount/pjdfstest.itest.ts) uses it.
#
#   bash scripts/build-pjdfstest.sh            # builds into .data/tools/pjdfstest unless it is current
#
# PJDFSTEST_SRC: the source (default ../shared/tools/pjdfstest beside the clone).
# PJDFSTEST_DIR: the build directory (default .data/tools/pjdfstest in the work tree).
# The build is kept, stamped with a hash of the source, and redone only when the source changes.
# Needs: autoconf automake libtool build-essential (scripts/setup.sh installs them); perl's `prove` runs it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="${PJDFSTEST_SRC:-$root/../shared/tools/pjdfstest}"
dir="${PJDFSTEST_DIR:-$root/.data/tools/pjdfstest}"

[[ -f "$src/pjdfstest.c" ]] || {
  echo "build-pjdfstest: no pjdfstest source at $src" >&2
  exit 1
}
src="$(cd "$src" && pwd)"

# What the build depends on: every file of the source, by content.
stamp_of() { (cd "$src" && find . -type f ! -path './.git/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1); }
want="$(stamp_of)"
if [[ -x "$dir/pjdfstest" && -f "$dir/.build-stamp" && "$(cat "$dir/.build-stamp")" == "$want" ]]; then
  echo "build-pjdfstest: $dir/pjdfstest is current"
  exit 0
fi

for tool in autoreconf cc make prove; do
  command -v "$tool" >/dev/null || {
    echo "build-pjdfstest: '$tool' is missing (apt-get install autoconf automake libtool build-essential perl)" >&2
    exit 1
  }
done

echo "build-pjdfstest: building $src into $dir"
mkdir -p "$(dirname "$dir")"
tmp="$(mktemp -d "$dir.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# A copy with write bits (CI's copy of shared/ has none), then build there and move it into place.
cp -R "$src/." "$tmp/"
chmod -R u+w "$tmp"
(
  cd "$tmp"
  autoreconf -ifs >autoreconf.log 2>&1 || { cat autoreconf.log >&2; exit 1; }
  ./configure >configure.log 2>&1 || { cat configure.log >&2; exit 1; }
  make pjdfstest >make.log 2>&1 || { cat make.log >&2; exit 1; }
)
printf '%s\n' "$want" >"$tmp/.build-stamp"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "build-pjdfstest: built $dir/pjdfstest"
