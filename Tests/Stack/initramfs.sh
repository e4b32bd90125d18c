#!/usr/bin/env bash
# Builds the guest's initramfs: busybox-static, the Debian kernel's modules for virtio, 9p,
# overlayfs (the systemd boot's root), Bluetooth (hci_vhci) and the crypto btvirt binds (AF_ALG
# ecb(aes), cmac), Tests/Stack/init and its systemd hand-over, Tests/Stack/systemd-root.
# Usage: initramfs.sh KERNEL_VERSION OUTPUT.cpio.gz
set -euo pipefail
export PATH=$PATH:/usr/sbin:/sbin # modprobe, for a user whose PATH lacks them
kver=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)

# In load order; each module's dependencies are resolved by modprobe --show-depends (modules.dep).
# The crypto modules come before anything starts btvirt, which binds AF_ALG "ecb(aes)" and "cmac(aes)".
modules=(virtio_pci 9pnet_virtio 9p overlay ecb aes_generic cmac af_alg algif_skcipher algif_hash bluetooth hci_vhci)

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,dev,proc,sys,host,tmp,lib/modules}
cp /bin/busybox "$root/bin/busybox"
# busybox --list names busybox itself too: skip it, or the loop would replace the binary by a link to itself.
for applet in $("$root/bin/busybox" --list); do
	[ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done

: >"$root/lib/modules/load-order"
for module in "${modules[@]}"; do
	while read -r verb path _; do
		[ "$verb" = insmod ] || continue # "builtin NAME": already in the kernel
		name=$(basename "$path")
		grep -qx "$name" "$root/lib/modules/load-order" && continue
		cp "$path" "$root/lib/modules/$name"
		echo "$name" >>"$root/lib/modules/load-order"
	done < <(modprobe -S "$kver" --show-depends "$module")
done
install -m 0755 "$here/init" "$root/init"
install -m 0755 "$here/systemd-root" "$root/systemd-root"

(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
