#!/usr/bin/env bash
# Builds beacond's Debian package (docs/install.md, "The Debian package"); `make deb` runs it on
# the release binary.
#
#   scripts/build-deb.sh BINARY OUTDIR [VERSION]   ->   OUTDIR/beacond_VERSION_ARCH.deb
#
# The version is the one `BINARY --version` prints; packaging/deb/changelog's top entry must say
# the same. VERSION overrides it only to build a test package that upgrades the real one (the
# real-stack upgrade test, e.g. 0.1.0+upgrade1): it must sort after the binary's version, and a
# changelog entry for it is prepended. The files are staged by `make install` under /usr, with
# the system units in /lib/systemd/system as bookworm's debhelper installs them; the binary is
# stripped as dh_strip does; the man page and the changelog are gzipped (-9n). Depends comes from
# dpkg-shlibdeps and what the maintainer scripts run. lintian checks the package: any error
# fails the build, everything else is printed. Mtimes are the last commit's (SOURCE_DATE_EPOCH).
set -euo pipefail

die() { echo "build-deb: $*" >&2; exit 1; }
if [ $# -lt 2 ] || [ $# -gt 3 ]; then die "usage: $0 BINARY OUTDIR [VERSION]"; fi

root=$(cd "$(dirname "$0")/.." && pwd)
pkg=$root/packaging/deb
[ -x "$1" ] || die "no binary at $1: run make release first"
binary=$(realpath "$1")
outdir=$2
override=${3:-}
for tool in dpkg-deb dpkg-shlibdeps dpkg-parsechangelog lintian strip gzip md5sum; do
	command -v "$tool" >/dev/null || die "$tool is missing: make deps-deb installs dpkg-dev and lintian"
done

# Native package: the version has no Debian revision, so no hyphen.
valid_version() { [[ $1 =~ ^[0-9][A-Za-z0-9.+~]*$ ]]; }
# `beacond --version` prints the bare version (0.1.0); a "beacond " before it is tolerated.
binary_version=$("$binary" --version | head -n 1)
binary_version=${binary_version#beacond }
binary_version=${binary_version//[[:space:]]/}
valid_version "$binary_version" || die "cannot read a version from $binary --version: '$binary_version'"
version=$binary_version
if [ -n "$override" ]; then
	valid_version "$override" || die "VERSION $override: digits first, then letters, digits, . + ~ only"
	dpkg --compare-versions "$override" gt "$binary_version" \
		|| die "VERSION $override must sort after the binary's $binary_version (it builds an upgrade)"
	version=$override
fi
arch=$(dpkg --print-architecture)

SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH
umask 022
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# dpkg-shlibdeps wants the package's files in debian/PACKAGE beside debian/control.
stage=$work/debian/beacond

# The files, where bookworm's debhelper would put them: system units in /lib/systemd/system
# (dh_installsystemd; /lib is /usr/lib on bookworm's merged /usr), the rest under /usr/lib.
make -C "$root" --no-print-directory install DESTDIR="$stage" PREFIX=/usr BINARY="$binary" \
	UNITDIR=/lib/systemd/system USERUNITDIR=/usr/lib/systemd/user \
	SYSUSERSDIR=/usr/lib/sysusers.d TMPFILESDIR=/usr/lib/tmpfiles.d >"$work/install.log" 2>&1 \
	|| { cat "$work/install.log" >&2; die "make install failed"; }
grep -q '^ExecStart=/usr/bin/beacond ' "$stage/lib/systemd/system/beacond.service" \
	|| die "the staged beacond.service does not run /usr/bin/beacond"
[ "$(cd "$stage/etc" && find . -type f)" = ./beacond/beacond.yaml ] \
	|| die "expected exactly one file under /etc, beacond/beacond.yaml (the conffile)"

# As dh_strip: no symbol table, .comment or .note (the build ID stays, in .note.gnu.build-id).
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$stage/usr/bin/beacond"
[ "$("$stage/usr/bin/beacond" --version | head -n 1)" = "$("$binary" --version | head -n 1)" ] \
	|| die "the stripped binary does not print the same version"

doc=$stage/usr/share/doc/beacond
gzip -9n "$stage/usr/share/man/man8/beacond.8"
cp "$pkg/changelog" "$work/changelog"
if [ -n "$override" ]; then
	# Dated after the entry below it (lintian: latest-changelog-entry-without-new-date).
	when=$(dpkg-parsechangelog -l "$pkg/changelog" -S Timestamp)
	when=$(( when + 1 > SOURCE_DATE_EPOCH ? when + 1 : SOURCE_DATE_EPOCH ))
	{
		printf 'beacond (%s) bookworm; urgency=medium\n\n' "$version"
		printf '  * Test package for the upgrade test: the %s binary, packaged as\n' "$binary_version"
		printf '    %s by scripts/build-deb.sh'"'"'s VERSION override.\n\n' "$version"
		printf ' -- beacond maintainers <beacond@georacing.invalid>  %s\n\n' \
			"$(LC_ALL=C date -u -R -d "@$when")"
		cat "$pkg/changelog"
	} >"$work/changelog"
fi
top=$(dpkg-parsechangelog -l "$work/changelog" -S Version)
[ "$top" = "$version" ] || die "packaging/deb/changelog's top entry is $top, the package is $version: add an entry"
gzip -9n <"$work/changelog" >"$doc/changelog.gz"
install -m 0644 "$pkg/copyright" "$doc/copyright"
install -D -m 0644 "$pkg/lintian-overrides" "$stage/usr/share/lintian/overrides/beacond"

# Depends: the binary's shared libraries (dpkg-shlibdeps reads a minimal debian/control), then
# what the maintainer scripts run, as debhelper adds them: systemd-sysusers
# (dh_installsysusers), deb-systemd-helper --user (dh_installsystemduser), systemd-tmpfiles.
mkdir -m 0755 "$stage/DEBIAN"
printf 'Source: beacond\n\nPackage: beacond\nArchitecture: any\n' >"$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O -e"debian/beacond/usr/bin/beacond")
shlibs=${shlibs#shlibs:Depends=}
[ -n "$shlibs" ] || die "dpkg-shlibdeps found no dependencies"
depends="$shlibs, init-system-helpers (>= 1.52), systemd | systemd-standalone-sysusers | systemd-sysusers"
depends+=", systemd | systemd-standalone-tmpfiles"

for script in postinst prerm postrm; do install -m 0755 "$pkg/$script" "$stage/DEBIAN/$script"; done
echo /etc/beacond/beacond.yaml >"$stage/DEBIAN/conffiles"
find "$stage" -type d -exec chmod 0755 {} +
find "$stage" -type f ! -path "$stage/DEBIAN/*" -exec chmod 0644 {} +
chmod 0755 "$stage/usr/bin/beacond"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) \
	>"$stage/DEBIAN/md5sums"
# As dpkg-gencontrol: KiB per file, rounded up, and 1 per directory or link.
size=$(cd "$stage" && find . -path ./DEBIAN -prune -o ! -path . -printf '%y %s\n' \
	| awk '{ n += ($1 == "f") ? int(($2 + 1023) / 1024) : 1 } END { print n }')
control=$(<"$pkg/control.in")
control=${control//@VERSION@/$version}
control=${control//@ARCH@/$arch}
control=${control//@INSTALLED_SIZE@/$size}
control=${control//@DEPENDS@/$depends}
printf '%s\n' "$control" >"$stage/DEBIAN/control"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/conffiles" "$stage/DEBIAN/md5sums"
find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$outdir"
deb=$outdir/beacond_${version}_${arch}.deb
# gzip, not dpkg-deb's default xz: a minute less to build (xz took 57 s of 80 on 2 cores) and
# less to unpack on a kiosk; the package is 10 MB bigger.
dpkg-deb --root-owner-group -Zgzip --build "$stage" "$deb" >/dev/null
if [ -n "$override" ]; then
	echo "built $deb ($(du -h "$deb" | cut -f1)): a test package, not checked by lintian"
	exit 0
fi

# Errors fail the build; warnings and info are printed, then the overridden tags (O:, the
# spelling hints on one line; the reasons are in packaging/deb/lintian-overrides). lintian 2.116
# also exits 2 for an overridden error under --show-overrides: exit 2 fails only with an E: line.
status=0
report=$(lintian --fail-on error --display-info --show-overrides "$deb") || status=$?
count() { printf '%s\n' "$report" | grep -c "^$1: " || true; }
printf '%s\n' "$report" | grep -E '^[EWIPX]: ' || true
printf '%s\n' "$report" | grep '^O: ' | sed -E 's/^(O: [^ ]+ spelling-error-in-binary) .* (\[[^]]*\])$/\1 \2/' \
	| uniq -c | awk '{ n = $1; $1 = ""; print substr($0, 2) (n > 1 ? " (" n " hints)" : "") }'
echo "built $deb ($(du -h "$deb" | cut -f1), $(stat -c %s "$deb") bytes), Depends: $depends"
echo "lintian: $(count E) errors, $(count W) warnings, $(count I) info, $(count O) overridden"
if [ "$status" = 2 ] && [ "$(count E)" = 0 ]; then status=0; fi
[ "$status" = 0 ] || die "lintian failed (exit $status)"
