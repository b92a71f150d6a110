#!/bin/bash
# Build the lab's guest image: a Debian root filesystem (debootstrap minbase;
# bookworm, or bullseye/trixie for the kernel matrix) with the kernel, soft-RoCE user tools and the kernel NFS server and
# client, packed into a raw ext4 image, plus the kernel and initrd taken out of
# it so QEMU can boot them with -kernel/-initrd (no bootloader needed).
#
# Usage: build-image.sh DEST_DIR [SUITE]
#   SUITE: bookworm (default; Linux 6.1), bullseye (5.10) or trixie (6.12).
#   Writes DEST_DIR/{rootfs.img,vmlinuz,initrd.img,build-info.txt}.
#   run.sh calls this only when its cache has no image for the current hash
#   of the suite + this file + packages.txt + lab-boot (see run.sh: image_hash).
#
# Only the small boot stub (lab-boot + lab.service) is baked into the image;
# the scenario scripts arrive at boot time over the 9p share, so editing a
# scenario does not force a rebuild.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dest=${1:?usage: build-image.sh DEST_DIR [SUITE]}
suite=${2:-bookworm}
mirror=${LAB_MIRROR:-http://deb.debian.org/debian}
case $suite in
    bullseye|bookworm|trixie) ;;
    *) echo "build-image.sh: unknown suite '$suite' (bullseye, bookworm or trixie)" >&2; exit 2 ;;
esac

[ "$(id -u)" = 0 ] || { echo "build-image.sh: must run as root (debootstrap, chroot)" >&2; exit 1; }
mkdir -p "$dest"

# Package list: one per line, '#' comments allowed.
pkgs=$(sed -e 's/#.*//' "$here/packages.txt" | tr -s ' \n' ',' | sed -e 's/^,//' -e 's/,$//')

work=$(mktemp -d "${dest%/}/.build.XXXXXX")
rootfs="$work/rootfs"
cleanup() {
    # debootstrap leaves proc/sys mounted if it fails half-way; unmount only
    # below our own temporary directory.
    for m in $(awk -v p="$rootfs" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

t0=$(date +%s)
echo "build-image: debootstrap $suite (minbase) from $mirror into $rootfs"
# --include pulls the kernel and tools in the same pass; debootstrap resolves
# their dependencies. The kernel's postinst builds the initramfs in the chroot.
debootstrap --variant=minbase --include="$pkgs" "$suite" "$rootfs" "$mirror"
t1=$(date +%s)

echo "build-image: configuring the guest"
echo lab > "$rootfs/etc/hostname"
printf '127.0.0.1 localhost\n10.99.0.1 labserver\n10.99.0.2 labclient\n' > "$rootfs/etc/hosts"
printf '/dev/vda / ext4 rw,relatime 0 1\n' > "$rootfs/etc/fstab"
# No root password is set: nobody logs in, the boot stub does all the work.

install -m 0755 "$here/lab-boot" "$rootfs/usr/local/sbin/lab-boot"
install -m 0644 "$here/lab.service" "$rootfs/etc/systemd/system/lab.service"
# bullseye's minbase may have no unit enabled for the target yet.
mkdir -p "$rootfs/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/lab.service "$rootfs/etc/systemd/system/multi-user.target.wants/lab.service"

# The NFS server is started by the server role only (after /etc/exports is
# written); timers would add random CPU load to a slow TCG guest.
for unit in nfs-server.service apt-daily.timer apt-daily-upgrade.timer \
            e2scrub_all.timer fstrim.timer systemd-tmpfiles-clean.timer; do
    systemctl --root="$rootfs" disable "$unit" >/dev/null 2>&1 || true
    systemctl --root="$rootfs" mask "$unit" >/dev/null 2>&1 || true
done
systemctl --root="$rootfs" unmask nfs-server.service >/dev/null 2>&1 || true

# Short NFSv4 lease and grace periods keep the v4 scenarios fast (the server
# refuses OPEN during grace).
cat >> "$rootfs/etc/nfs.conf" <<'EOF'

# rdma-analyzer lab: short lease/grace so NFSv4 scenarios do not wait 90 s.
[nfsd]
lease-time=10
grace-time=10
EOF

kver=$(ls "$rootfs/lib/modules" | sort -V | tail -n1)
[ -n "$kver" ] || { echo "build-image: no kernel in the rootfs (linux-image-amd64 missing?)" >&2; exit 1; }

# soft-iWARP for run.sh --fabric siw: Debian's 6.1 kernel lacks siw.ko; built
# (or taken from its cache) while apt's lists are still in the rootfs.
"$here/build-siw.sh" "$rootfs" "$kver"

# The image does not need the downloaded .debs or apt's lists.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
cp "$rootfs/boot/vmlinuz-$kver" "$work/vmlinuz"
cp "$rootfs/boot/initrd.img-$kver" "$work/initrd.img"

echo "build-image: mkfs.ext4 -d (2 GiB sparse image)"
mkfs.ext4 -q -F -L labroot -d "$rootfs" "$work/rootfs.img" 2G
t2=$(date +%s)

{
    echo "kernel=$kver"
    echo "suite=$suite"
    echo "mirror=$mirror"
    echo "packages=$pkgs"
    echo "siw=$(cd "$rootfs" && find "lib/modules/$kver" -name 'siw.ko*' | head -n1)"
    echo "debootstrap_seconds=$((t1 - t0))"
    echo "total_seconds=$((t2 - t0))"
    echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$work/build-info.txt"

# Publish atomically-ish: the image last, so a half-built cache is never used.
mv "$work/vmlinuz" "$work/initrd.img" "$work/build-info.txt" "$dest/"
mv "$work/rootfs.img" "$dest/rootfs.img"
echo "build-image: done in $((t2 - t0)) s (kernel $kver)"
