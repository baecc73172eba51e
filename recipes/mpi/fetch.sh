#!/usr/bin/env bash
# The project's MPI recipe: the headers (and link-time libraries) the engine's MPI bootstrap plugins are
# compiled against, from Debian bookworm's binary packages, pinned below by version and sha256 (the values
# of bookworm's signed Packages index, `apt-cache show <package>`), fetched from Debian's pool and unpacked
# into a private root (never into /usr). CMake looks for mpi.h and the library only there (NO_DEFAULT_PATH):
# a plugin never depends on which MPI -dev package happens to be installed on the build machine.
#
#   bash recipes/mpi/fetch.sh [ROOT_FILE]   # prints the root (and writes it to ROOT_FILE)
#
#   <root>/openmpi/include/mpi.h   <root>/openmpi/lib/libmpi.so      (Open MPI 4.1.4: libmpi.so.40)
#   <root>/mpich/include/mpi.h                                       (MPICH 4.0.2, the MPICH ABI)
#
# Open MPI's library is only linked against (DT_NEEDED libmpi.so.40, the soname of Open MPI 4.0-5.x); a
# wheel never carries it (auditwheel --exclude): a job loads its own MPI's. The MPICH plugin links nothing:
# MPICH's ABI (soname 12) is libmpich.so.12 in Debian and libmpi.so.12 in MPICH's own builds and PyPI's
# `mpich`, so the engine loads whichever the job has before the plugin.
#
# Environment: MPI_CACHE_DIR (default <repo>/.cache/mpi); MPI_DEB_MIRRORS (space-separated, default
# deb.debian.org then archive.debian.org, where bookworm moves when it is archived).
# MPI_FETCH_ONLY=1: download and check the .debs into $MPI_CACHE_DIR/debs, unpack nothing (the CI job does
# this on its runner for a builder image that then needs no network). Needs curl or wget (or the .debs
# already in $MPI_CACHE_DIR/debs) and dpkg-deb or ar + tar (xz).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${MPI_CACHE_DIR:-$REPO_ROOT/.cache/mpi}"
mkdir -p "$CACHE" && CACHE="$(cd "$CACHE" && pwd)"
MIRRORS="${MPI_DEB_MIRRORS:-http://deb.debian.org/debian http://archive.debian.org/debian}"

die() { echo "recipes/mpi: $*" >&2; exit 1; }
case "$(uname -m)" in
  x86_64) ARCH=amd64; TRIPLET=x86_64-linux-gnu ;;
  aarch64) ARCH=arm64; TRIPLET=aarch64-linux-gnu ;;
  *) die "only x86_64 and aarch64 (Debian amd64, arm64) are pinned here (got $(uname -m))" ;;
esac

# flavour package version pool-path sha256, per architecture (bookworm main; `apt-cache show`, Checksums-Sha256)
PINS_amd64="openmpi libopenmpi-dev 4.1.4-3+b1 pool/main/o/openmpi 089c17e74439e53ad6cab5f11d935bc9df93b26da0bd87b2b72eb789b467bea2
openmpi libopenmpi3 4.1.4-3+b1 pool/main/o/openmpi acbb84293aa092a49a457a724d293ff0bcceabf297f2828ef9e8cad08b28fc99
mpich libmpich-dev 4.0.2-3+b1 pool/main/m/mpich d7fc62d292e0ff3a08a73b5293cb38e8ffdbcc31ff93c1ca12ab448b3d6140dc"
PINS_arm64="openmpi libopenmpi-dev 4.1.4-3+b1 pool/main/o/openmpi bfb23a3edd52df4c3a620065b4877ef03c7648ffca4ac21f8e8b83cc627b168e
openmpi libopenmpi3 4.1.4-3+b1 pool/main/o/openmpi 35635bafc712a7d2305ffa68b52faceacdad8f8da99449022ee78b2ac5ec77f6
mpich libmpich-dev 4.0.2-3+b1 pool/main/m/mpich d8dd53b6daf9c4e9dcb30daead54b5829a44d6da9f964dbaf70c61fd7c4485c4"
PINS_var="PINS_$ARCH"
PINS="${!PINS_var}"
LAYOUT="v2"
root="$CACHE/openmpi-4.1.4-3+b1-mpich-4.0.2-3+b1-$ARCH-$LAYOUT/root"

report() { echo "$root"; [ "${1:-}" = "" ] || echo "$root" >"$1"; }
if [ "${MPI_FETCH_ONLY:-}" != "1" ] && [ -f "$root/.complete" ]; then
  echo "recipes/mpi: cached $root" >&2
  report "${1:-}"; exit 0
fi

check_sha() { [ -f "$1" ] && echo "$2  $1" | sha256sum --check --status; }
download() {  # download URL FILE
  if command -v curl >/dev/null; then curl -fsSL --retry 2 -o "$2" "$1"
  elif command -v wget >/dev/null; then wget -q -O "$2" "$1"
  else die "neither curl nor wget: install one, or put the pinned .debs into $debs"; fi
}

debs="$CACHE/debs"
mkdir -p "$debs"
while read -r flavour package version pool sha; do
  file="${package}_${version}_${ARCH}.deb"
  check_sha "$debs/$file" "$sha" && continue
  got=""
  for mirror in $MIRRORS; do
    echo "recipes/mpi: fetching $mirror/$pool/$file" >&2
    if download "$mirror/$pool/$file" "$debs/$file.part" 2>/dev/null && check_sha "$debs/$file.part" "$sha"; then
      mv "$debs/$file.part" "$debs/$file"; got=1; break
    fi
    rm -f "$debs/$file.part"
  done
  [ -n "$got" ] || die "$file ($flavour) could not be fetched with the pinned sha256 $sha from: $MIRRORS (set MPI_DEB_MIRRORS to a Debian mirror that carries bookworm, or put the file into $debs)"
done <<<"$PINS"

if [ "${MPI_FETCH_ONLY:-}" = "1" ]; then
  echo "recipes/mpi: .debs checked in $debs" >&2
  exit 0
fi

unpack() {  # unpack DEB DIR
  if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$1" "$2"; return; fi
  command -v ar >/dev/null || die "neither dpkg-deb nor ar to unpack $1"
  local tmp; tmp="$(mktemp -d)"
  (cd "$tmp" && ar x "$1") && tar -C "$2" -xf "$tmp"/data.tar.*
  rm -rf "$tmp"
}

work="$(dirname "$root")"
rm -rf "$work" && mkdir -p "$work/debian" "$root"
while read -r flavour package version pool sha; do
  unpack "$debs/${package}_${version}_${ARCH}.deb" "$work/debian"
done <<<"$PINS"

lib="$work/debian/usr/lib/$TRIPLET"
# One folder per MPI: include/, and for Open MPI lib/ with libmpi.so.40 under its soname and the link name the
# linker looks for (Debian's libmpi.so points into /etc/alternatives: not followed here). MPICH's plugin links
# no library (its soname differs between builds: the engine loads the job's first), so only its headers.
mkdir -p "$root/openmpi/lib" "$root/mpich"
cp -a "$lib/openmpi/include" "$root/openmpi/include"
cp -L "$lib/libmpi.so.40" "$root/openmpi/lib/libmpi.so.40"
ln -s libmpi.so.40 "$root/openmpi/lib/libmpi.so"
cp -a "$work/debian/usr/include/$TRIPLET/mpich" "$root/mpich/include"
for f in openmpi/include/mpi.h openmpi/lib/libmpi.so.40 mpich/include/mpi.h; do
  [ -f "$root/$f" ] || die "no $f after unpacking the pinned packages"
done
# What the plugins were built against, for the build manifest
printf '{"openmpi": "libopenmpi-dev 4.1.4-3+b1 (Debian bookworm %s)", "mpich": "libmpich-dev 4.0.2-3+b1 (Debian bookworm %s)"}\n' "$ARCH" "$ARCH" \
  >"$root/headers.json"
rm -rf "$work/debian"
touch "$root/.complete"
report "${1:-}"
