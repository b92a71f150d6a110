#!/bin/bash
# Put the soft-iWARP module (siw.ko) into a guest root filesystem whose kernel
# does not ship it (Debian's 6.1 builds without CONFIG_RDMA_SIW), so the lab
# can run NFS over iWARP (run.sh --fabric siw).
#
# Usage: build-siw.sh ROOTFS KVER
#   Called by build-image.sh on the half-built rootfs (apt lists still there).
#   Installs ROOTFS/lib/modules/KVER/updates/siw.ko and runs depmod.
#
# The module is compiled inside the rootfs itself, with Debian's own compiler
# and kbuild for KVER and the siw sources of the very same kernel upload
# (linux-source-X.Y at the image package's source version): a host compiler or
# a mainline tree could differ from what built the kernel. The build tools are
# purged again afterwards, so the image only gains the .ko. The result is
# cached per kernel version and package version, so rebuilding the image (any
# change of the image files) costs a copy, not a compile.
set -euo pipefail

rootfs=${1:?usage: build-siw.sh ROOTFS KVER}
kver=${2:?usage: build-siw.sh ROOTFS KVER}
log() { echo "build-siw: $*"; }
die() { echo "build-siw: ERROR: $*" >&2; exit 1; }

if find "$rootfs/lib/modules/$kver" -name 'siw.ko*' 2>/dev/null | grep -q .; then
    log "kernel $kver already has siw: nothing to build"
    exit 0
fi

in_root() { chroot "$rootfs" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }

# The exact upload of the guest kernel: the version of linux-headers-KVER,
# built from the same 'linux' source as linux-source-X.Y (the image package
# comes from 'linux-signed-amd64', whose version has a +N of its own).
in_root dpkg-query -W "linux-image-$kver" > /dev/null 2>&1 \
    || die "linux-image-$kver is not installed in $rootfs"
srcver=$(in_root apt-cache show --no-all-versions "linux-headers-$kver" 2>/dev/null | sed -n 's/^Version: //p' | head -n1)
[ -n "$srcver" ] || die "no linux-headers-$kver in the rootfs's apt lists (mirror $(cat "$rootfs/etc/apt/sources.list" 2>/dev/null))"
series=$(echo "$kver" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
cache=${LAB_SIW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdma-analyzer-lab/siw}/$kver/$srcver
dest=$rootfs/lib/modules/$kver/updates

if [ ! -s "$cache/siw.ko" ]; then
    log "compiling siw for $kver from linux-source-$series $srcver"
    mounted=0
    if ! mountpoint -q "$rootfs/proc"; then mount -t proc proc "$rootfs/proc"; mounted=1; fi
    undo() {
        [ "$mounted" = 1 ] && umount -l "$rootfs/proc" 2>/dev/null
        rm -rf "$rootfs/tmp/siw-build"
    }
    trap undo EXIT
    in_root apt-get install -y -q --no-install-recommends "linux-headers-$kver" make \
        || die "apt-get install linux-headers-$kver failed in the rootfs (mirror reachable?)"
    mkdir -p "$rootfs/tmp/siw-build"
    (cd "$rootfs/tmp/siw-build" && in_root sh -c "cd /tmp/siw-build && apt-get download -q linux-source-$series=$srcver") \
        || die "apt-get download linux-source-$series=$srcver failed"
    # Only the siw folder is needed out of the ~140 MB source tarball.
    deb=$(ls "$rootfs"/tmp/siw-build/linux-source-"$series"_*.deb)
    dpkg-deb --fsys-tarfile "$deb" \
        | tar -xO --wildcards "./usr/src/linux-source-$series.tar.xz" \
        | tar -xJ -C "$rootfs/tmp/siw-build" --wildcards "linux-source-$series/drivers/infiniband/sw/siw/*"
    src=/tmp/siw-build/linux-source-$series/drivers/infiniband/sw/siw
    in_root make -s -C "/usr/src/linux-headers-$kver" M="$src" CONFIG_RDMA_SIW=m modules \
        || die "compiling siw against linux-headers-$kver failed"
    mkdir -p "$cache"
    cp "$rootfs$src/siw.ko" "$cache/siw.ko.tmp" && mv "$cache/siw.ko.tmp" "$cache/siw.ko"
    # debootstrap marks nothing as automatic, so autoremove takes exactly
    # what the install above pulled in (gcc, kbuild, headers).
    in_root apt-get purge -y -q "linux-headers-$kver" make > /dev/null
    in_root apt-get autoremove --purge -y -q > /dev/null
    in_root apt-get clean
    undo
    trap - EXIT
else
    log "siw for $kver ($srcver) from the cache: $cache/siw.ko"
fi

mkdir -p "$dest"
install -m 0644 "$cache/siw.ko" "$dest/siw.ko"
in_root depmod "$kver"
vermagic=$(in_root modinfo -k "$kver" -F vermagic siw) || die "depmod did not register siw for $kver"
log "installed $dest/siw.ko (vermagic: $vermagic)"
