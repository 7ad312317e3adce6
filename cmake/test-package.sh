#!/bin/bash
# test-package.sh [BUILD]: the Debian package as a user meets it.  Built by cpack from BUILD,
# installed with apt (its dependencies resolved from Debian's), then, from a directory outside
# the tree: a program compiled with `mcs -pkg:spersistence` and the project template
# (examples/template) built with xbuild against the installed SPersistence.dll, each run with
# /usr/bin/spmono twice (a cold start, then a warm restart from its persisted state), spdump
# reading the store, the man pages and pkg-config found; then the package is purged and
# nothing it installed may be left.  Needs root or sudo (CI's machine has both).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
fail () { echo "test-package: FAIL: $*" >&2; exit 1; }
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
! dpkg -s spmono > /dev/null 2>&1 || fail "spmono is installed already (apt-get remove spmono first): this test installs and removes it"
version=$(sed -n 's/^#define SPMONO_VERSION "\(.*\)"/\1/p' "$here/mono/spersist/sp-version.h")
deb=$build/spmono_${version}_amd64.deb
rm -f "$deb"
(cd "$build" && cpack -G DEB > cpack.log 2>&1) || { cat "$build/cpack.log"; fail "cpack -G DEB"; }
[ -f "$deb" ] || fail "cpack made no $deb: $(ls "$build"/*.deb 2>/dev/null)"
grep -q "mono-runtime (>= 6.8.0.105)" <<< "$(dpkg-deb -f "$deb" Depends)" || fail "Depends lacks mono-runtime: $(dpkg-deb -f "$deb" Depends)"
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/spmono ./usr/bin/spdump ./usr/lib/spmono/SPersistence.dll ./usr/lib/pkgconfig/spersistence.pc \
	./usr/share/man/man1/spmono.1.gz ./usr/share/man/man1/spdump.1.gz ./usr/share/doc/spmono/README.md \
	./usr/share/doc/spmono/FORMAT.md ./usr/share/doc/spmono/examples/template/Plant.csproj; do
	grep -qx -- "$f" <<< "$contents" || fail "the package lacks $f"
done

work=$(mktemp -d /tmp/spmono-package.XXXXXX)
cleanup () { $SUDO apt-get purge -y spmono > /dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
$SUDO apt-get install -y "$deb" > "$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get install $deb"; }
installed=$(dpkg -L spmono)
cd "$work"
[ "$(command -v spmono)" = /usr/bin/spmono ] || fail "spmono is not /usr/bin/spmono: $(command -v spmono)"
[ "$(pkg-config --modversion spersistence)" = "$version" ] || fail "pkg-config spersistence: $(pkg-config --modversion spersistence 2>&1)"
[ "$(spdump --version)" = "spdump (spmono) $version" ] || fail "spdump --version: $(spdump --version)"
man -w spmono > /dev/null 2>&1 || [ -f /usr/share/man/man1/spmono.1.gz ] || fail "no spmono(1) installed"

# a cold start, then a warm restart: run PROGRAM.exe, check its first line, twice
restarts () {
	local exe=$1 out
	out=$(spmono "$exe" 3) || fail "spmono $exe: $out"
	grep -q "^cold start" <<< "$out" || fail "$exe, first run: $out"
	out=$(spmono "$exe" 2) || fail "spmono $exe, again: $out"
	grep -q "^warm restart: resuming after period 3" <<< "$out" || fail "$exe, second run: $out"
}
mcs -nologo -warnaserror -pkg:spersistence -out:plant.exe "$here/examples/template/Program.cs" || fail "mcs -pkg:spersistence"
restarts plant.exe
store=$(ls -d plant*.spstore) || fail "no store beside plant.exe: $(ls)"
spdump verify "$store" > /dev/null || fail "spdump verify $store: $(spdump verify "$store" 2>&1)"
cp -r "$here/examples/template" template
(cd template && xbuild /nologo /verbosity:minimal Plant.csproj > xbuild.log 2>&1) || { cat template/xbuild.log; fail "xbuild of the template"; }
! grep -qi "warning" template/xbuild.log || fail "xbuild warned: $(grep -i warning template/xbuild.log)"
[ ! -e template/bin/Release/SPersistence.dll ] || fail "the template copied SPersistence.dll beside the program"
restarts template/bin/Release/Plant.exe

cd /
$SUDO apt-get purge -y spmono > "$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "apt-get purge spmono"; }
! dpkg -s spmono > /dev/null 2>&1 || fail "spmono still installed after purge"
for f in $installed; do
	[ -d "$f" ] || [ ! -e "$f" ] || fail "$f left behind by the purge"
done
echo "package $(basename "$deb"): installed, used from outside the tree (mcs -pkg, xbuild), purged clean"
