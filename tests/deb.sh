#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deb.sh KVER...: the Debian packages on this host, as a user gets them.
# Builds them (make deb), runs lintian, installs them with apt-get, sees
# DKMS build and install the module for each KVER (never loading it),
# builds tests/deb/user.c against the installed library with pkg-config
# alone, then removes and purges them and looks for anything left behind.
# Prints one "ok NAME" or "not ok NAME" line per result (details as "#"
# lines after it) for check.sh, and leaves in $out/deb/payload what the
# VMs run: the user program (static), and the packaged uio-heap with the
# shared libraries it needs.  Exits non-zero if a result failed.
set -euo pipefail
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"

pkgs=(uio-heap-dkms libuioheap0 libuioheap-dev uio-heap-tools)
ver=$(cat "$top/VERSION")
rc=0

# res STATUS NAME [DETAILS]: one result; STATUS 0 passes.
res() {
	if [ "$1" = 0 ]; then
		echo "ok $2"
	else
		echo "not ok $2"; rc=1
		if [ -n "${3:-}" ]; then printf '%s\n' "$3" | sed 's/^/# /'; fi
	fi
}

installed() {
	dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${pkgs[@]}" 2>/dev/null |
		awk '$1 != "un" { print $2 }'
}

# What a purge must not leave behind, one line each.
leftovers() {
	installed
	find /lib/modules/*/updates -name 'uio_heap.ko*' 2>/dev/null || true
	ls -d /var/lib/dkms/uio-heap /usr/src/uio-heap-* /lib/udev/rules.d/70-uio-heap.rules \
		/usr/include/uioheap /usr/lib/*/libuioheap* /usr/lib/*/pkgconfig/uioheap.pc \
		/usr/bin/uio-heap* 2>/dev/null || true
	getent group uioheap || true
}

apt() {
	DEBIAN_FRONTEND=noninteractive apt-get -y -q --no-install-recommends "$@"
}

# purge_ours: what this script installed goes, loudly if it cannot.
marker=$cache/.deb-installed
purge_ours() {
	local left
	mapfile -t left < <(installed)
	if [ ${#left[@]} != 0 ] && ! apt purge "${left[@]}" >"$cache/.deb-purge.log" 2>&1; then
		echo "deb: purge of ${left[*]} failed:" >&2
		tail -n 20 "$cache/.deb-purge.log" >&2
		return 1
	fi
	rm -f "$marker"
}

# One run at a time on a host.  Packages left by an interrupted run (the
# marker says so) are purged first; anything else of uio-heap on the host
# is somebody's own install, which this test must not overwrite or purge.
exec 9>"$cache/.lock-deb"
flock 9
[ -f "$marker" ] && purge_ours
msg=$(leftovers; dpkg --audit 2>&1)
res ${#msg} "deb: the host holds nothing of uio-heap beforehand" "$msg"
[ -z "$msg" ] || exit 1

msg=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
res "$([ "$msg" = "$ver" ]; echo $?)" "deb: debian/changelog version matches VERSION ($msg)"

if ! changes=$(UIOHEAP_OUT=$out "$top/scripts/deb.sh" 2>&1); then
	res 1 "deb: make deb" "$changes"
	exit 1
fi
res 0 "deb: make deb"
debdir=${changes%/*}
debs=()
for p in "${pkgs[@]}"; do debs+=("$debdir/${p}_${ver}_"*.deb); done

msg=$(lintian --fail-on error "$changes" 2>&1) && r=0 || r=$?
msg=$(grep -v 'running with root privileges' <<<"$msg" || true)
res "$r" "deb: lintian, no errors ($(grep -c '^W:' <<<"$msg" || true) warnings)" "$msg"
if [ "$r" = 0 ] && [ -n "$msg" ]; then printf '%s\n' "$msg" | sed 's/^/# lintian: /'; fi

# DKMS signs with a key of its own making: a private one, not the host's.
keys=$(mktemp -d)
trap 'purge_ours || true; rm -rf "$keys"' EXIT
trap 'exit 130' INT TERM HUP
: >"$marker"
export mok_signing_key=$keys/mok.key mok_certificate=$keys/mok.pub
msg=$(apt install "${debs[@]}" 2>&1) && r=0 || r=$?
res "$r" "deb: apt-get install ./{$(IFS=,; echo "${pkgs[*]}")}.deb" "$msg"

for k in "$@"; do
	st=$(dkms status -m uio-heap -v "$ver" -k "$k" 2>&1)
	ko=$(find "/lib/modules/$k/updates/dkms" -name 'uio_heap.ko*' 2>/dev/null)
	r=1
	if [[ $st == *": installed"* ]] && [ -n "$ko" ] &&
	   modinfo -F vermagic "$ko" | grep -q "^$k "; then r=0; fi
	res "$r" "deb: DKMS built and installed the module for $k" "$st"
done
r=1
if getent group uioheap >/dev/null && [ -f /lib/udev/rules.d/70-uio-heap.rules ]; then r=0; fi
res "$r" "deb: udev rule installed, group uioheap created"

# The installed command: exit status 3 where uio_heap is not loaded (it
# never is here, unless someone else loaded it).
want=3
[ -d /sys/class/uio_heap ] && want=0
msg=$(uio-heap list 2>&1) && r=0 || r=$?
res $((r != want)) "deb: installed uio-heap list: exit status $want" "$msg (exit $r)"

# A user's program, with pkg-config alone: linked against the shared
# library (run here on a node that cannot exist: exit 3), and statically
# for the VMs.
pay=$out/deb/payload
mkdir -p "$pay"
user=$top/tests/deb/user.c
# shellcheck disable=SC2046
msg=$(gcc -Wall -Wextra -Werror $(pkg-config --cflags uioheap) -o "$pay/user-shared" \
	"$user" $(pkg-config --libs uioheap) 2>&1 && "$pay/user-shared" uio-heap-test-no-such-node) && r=0 || r=$?
readelf -d "$pay/user-shared" 2>/dev/null | grep -q 'NEEDED.*libuioheap\.so\.0' || r=-1
res $((r != 3)) "deb: program built with pkg-config uioheap runs against libuioheap.so.0" "$msg (exit $r)"
# shellcheck disable=SC2046
msg=$(gcc -static -Wall -Wextra -Werror $(pkg-config --static --cflags uioheap) -o "$pay/user" \
	"$user" $(pkg-config --static --libs uioheap) 2>&1) && r=0 || r=$?
res "$r" "deb: program built statically with pkg-config --static uioheap" "$msg"

# The packaged uio-heap and the libraries it loads, run in the VMs through
# the dynamic loader.
cp /usr/bin/uio-heap "$pay/"
for f in $(ldd /usr/bin/uio-heap | awk '/=>/ { print $3 } /^\t\// { print $1 }'); do
	cp -L "$f" "$pay/"
done
rm "$pay/user-shared"

msg=$(apt remove "${pkgs[@]}" 2>&1) &&
	msg=$(find /lib/modules/*/updates -name 'uio_heap.ko*' 2>/dev/null
	      ls -d /var/lib/dkms/uio-heap 2>/dev/null || true)
res ${#msg} "deb: apt-get remove takes the module out of every kernel" "$msg"
# Removed packages without conffiles are gone already.
msg=$(purge_ours 2>&1) && msg=$(leftovers)
res ${#msg} "deb: apt-get purge leaves nothing (module, DKMS tree, sources, rule, group, files)" "$msg"
exit $rc
