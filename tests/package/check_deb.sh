#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian package with cpack and checks it: lintian without errors or warnings, control
# fields and scripts, the exact file list and modes, the conffile, no build paths, the unit
# (systemd-analyze verify), the journal catalog, the changelog and manual page, the binary and
# config from an unpacked root, and what the maintainer scripts ask of systemctl,
# deb-systemd-helper and deb-systemd-invoke. Usage: check_deb.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(realpath "$1")
source=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
ok() { echo "ok: $*"; }

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; exit 1; }
debs=("$work"/out/neutracerd_*.deb)
if [ ${#debs[@]} -ne 1 ] || [ ! -f "${debs[0]}" ]; then
  echo "FAIL: no single .deb in $work/out" >&2
  exit 1
fi
deb=${debs[0]}
version=$(sed -n 's/^project(neutracerd VERSION \([0-9.]*\).*/\1/p' "$source/CMakeLists.txt")
ok "built $(basename "$deb")"

# ---- lintian (Debian package lintian, from scripts/install-deps.sh) -------------------------
# Every error and warning fails, and so would an override (the package ships none); info and
# pedantic tags pass.
if ! command -v lintian >/dev/null; then
  fail "lintian not installed (scripts/install-deps.sh installs it)"
else
  lintian --display-info --show-overrides "$deb" >"$work/lintian" 2>"$work/lintian.err" || true
  if grep -E '^[EWO]: ' "$work/lintian"; then
    fail "lintian $(lintian --print-version) reports errors, warnings or overrides (above)"
  elif grep -vxF 'running with root privileges is not recommended!' "$work/lintian.err" |
    grep .; then
    fail "lintian failed (above)"
  else
    ok "lintian $(lintian --print-version): no errors or warnings" \
      "($(grep -c '^I: ' "$work/lintian") info tags)"
  fi
fi

# ---- control ------------------------------------------------------------------------------
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = neutracerd ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$version" ] || fail "Version: $(field Version), want $version"
[ "$(field Architecture)" = "$(dpkg --print-architecture)" ] || fail "Architecture: $(field Architecture)"
[ -n "$(field Maintainer)" ] || fail "Maintainer empty"
[ -n "$(field Description)" ] || fail "Description empty"
if [ "$(field Description | wc -l)" -lt 2 ] || field Description | grep -q ';'; then
  fail "Description is not a summary line and a paragraph: $(field Description)"
fi
# Computed by dpkg-shlibdeps from what the binary links.
depends=$(field Depends)
for library in libc6 libbpf1 libelf1 libyaml-cpp0.7 libcivetweb1 libsystemd0; do
  grep -qE "(^|, )$library( |,|$)" <<<"$depends" || fail "Depends lacks $library: $depends"
done
ok "control fields (Depends: $depends)"

dpkg-deb -e "$deb" "$work/control"
[ "$(cat "$work/control/conffiles")" = /etc/neutracerd/neutracerd.yaml ] ||
  fail "conffiles: $(cat "$work/control/conffiles")"
for script in postinst prerm postrm; do
  [ -x "$work/control/$script" ] || fail "$script missing or not executable"
  sh -n "$work/control/$script" || fail "$script is not valid sh"
done
ok "conffiles lists the config; maintainer scripts present"

# ---- file list ----------------------------------------------------------------------------
expected=(
  ./etc/neutracerd/neutracerd.yaml
  ./lib/systemd/system/neutracerd.service
  ./usr/lib/systemd/catalog/neutracerd.catalog
  ./usr/sbin/neutracerd
  ./usr/share/doc/neutracerd/README.md
  ./usr/share/doc/neutracerd/changelog.gz
  ./usr/share/doc/neutracerd/copyright
  ./usr/share/doc/neutracerd/docs/alerts.md
  ./usr/share/doc/neutracerd/docs/configuration.md
  ./usr/share/doc/neutracerd/docs/costs.md
  ./usr/share/doc/neutracerd/docs/how-it-works.md
  ./usr/share/doc/neutracerd/docs/metrics.md
  ./usr/share/doc/neutracerd/docs/operations.md
  ./usr/share/doc/neutracerd/runbook.md
  ./usr/share/neutracerd/alertmanager/alertmanager.yml
  ./usr/share/neutracerd/prometheus/neutracer-alerts.yml
  ./usr/share/neutracerd/prometheus/prometheus.yml
  ./usr/share/man/man8/neutracerd.8.gz
)
while IFS= read -r file; do
  expected+=("./usr/share/neutracerd/grafana/${file#"$source/grafana/"}")
done < <(find "$source/grafana/dashboards" "$source/grafana/provisioning" -type f)
dpkg-deb -c "$deb" >"$work/contents"
awk '$1 !~ /^d/ { print $6 }' "$work/contents" | sort >"$work/files"
printf '%s\n' "${expected[@]}" | sort >"$work/expected"
if ! diff -u "$work/expected" "$work/files"; then
  fail "package files differ from the expected list (- missing, + unexpected)"
else
  ok "exactly the ${#expected[@]} expected files"
fi
awk '$2 != "root/root" { print }' "$work/contents" | grep . && fail "files not owned by root/root"
grep -E ' \./usr/sbin/neutracerd$' "$work/contents" | grep -q '^-rwxr-xr-x' || fail "binary mode"
awk '$1 ~ /^-/ && $6 != "./usr/sbin/neutracerd" && $1 != "-rw-r--r--" { print }' "$work/contents" |
  grep . && fail "data files not 0644"
ok "owners and modes"

# ---- unpacked root ------------------------------------------------------------------------
root=$work/root
dpkg -x "$deb" "$root"
if grep -rlF -e "$build" -e "$source" "$root" >"$work/leaks"; then
  fail "build paths inside: $(tr '\n' ' ' <"$work/leaks")"
else
  ok "no build or source paths in any file"
fi
readelf -S "$root/usr/sbin/neutracerd" | grep -q '\.debug_info' && fail "binary not stripped"
cmp -s "$root/etc/neutracerd/neutracerd.yaml" "$source/config/neutracerd.yaml" ||
  fail "config differs from config/neutracerd.yaml"
unit=$root/lib/systemd/system/neutracerd.service
grep -qx 'ExecStart=/usr/sbin/neutracerd --config /etc/neutracerd/neutracerd.yaml' "$unit" ||
  fail "ExecStart: $(grep ^ExecStart "$unit")"
[ "$("$root/usr/sbin/neutracerd" --version)" = "neutracerd $version" ] || fail "--version"
"$root/usr/sbin/neutracerd" --check-config --config "$root/etc/neutracerd/neutracerd.yaml" >/dev/null ||
  fail "the packaged config does not validate"
ok "binary runs; packaged config validates; unit runs /usr/sbin/neutracerd with /etc config"

# The changelog's latest entry is this version; the manual page renders without warnings and
# documents every flag --help lists, aliases included.
zcat "$root/usr/share/doc/neutracerd/changelog.gz" >"$work/changelog"
changelog_version=$(dpkg-parsechangelog -l "$work/changelog" -S Version)
[ "$changelog_version" = "$version" ] || fail "changelog's latest version $changelog_version, want $version"
manpage=$root/usr/share/man/man8/neutracerd.8.gz
if LC_ALL=C.UTF-8 man --warnings -E UTF-8 -l -Tutf8 -Z "$manpage" 2>&1 >/dev/null | grep .; then
  fail "manual page: groff warnings (above)"
fi
flags=$("$root/usr/sbin/neutracerd" --help | grep -oE '^ +(-[a-z], )?--[a-z.-]+|alias --[a-z.-]+' |
  grep -oE -- '--[a-z.-]+')
for flag in $flags; do
  zcat "$manpage" | grep -qF -- "${flag//-/\\-}" || fail "neutracerd(8) does not document $flag"
done
ok "changelog $version; neutracerd(8) renders and documents all $(wc -w <<<"$flags") flags of --help"

"$source/tests/cli/unit_verify.sh" "$unit" "$root/usr/sbin/neutracerd" || fail "unit does not verify"

# The catalog compiles, and journalctl lists one entry per MESSAGE_ID in it.
journalctl --root="$root" --update-catalog
ids=$(grep -cE '^-- [0-9a-f]{32}$' "$root/usr/lib/systemd/catalog/neutracerd.catalog")
listed=$(journalctl --root="$root" --list-catalog | grep -c 'neutracerd:' || true)
if [ "$ids" -eq 0 ] || [ "$listed" -ne "$ids" ]; then
  fail "catalog: $listed entries listed, $ids in the file"
fi
ok "journal catalog: $listed entries"

# ---- maintainer scripts, against tools that record what they are asked --------------------
# deb-systemd-helper answers its queries from $work/state: "installed" (it has a state file for
# the unit: an earlier version ran update-state) and "enabled" (the unit's links exist).
mkdir -p "$work/bin"
for tool in systemctl journalctl deb-systemd-invoke; do
  printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n' "$tool" "$work" >"$work/bin/$tool"
  chmod +x "$work/bin/$tool"
done
printf '#!/bin/sh\necho "deb-systemd-helper $*" >>"%s/calls"
case "$*" in
debian-installed*) grep -qx installed "%s/state" ;;
"--quiet was-enabled"*) grep -qx enabled "%s/state" ;;
esac\n' "$work" "$work" "$work" >"$work/bin/deb-systemd-helper"
chmod +x "$work/bin/deb-systemd-helper"
# The scripts only talk to systemd when it runs (/run/systemd/system): give them one in a
# private mount namespace, or none (systemd=no, as in a container image build).
namespace=(unshare --mount)
[ "$(id -u)" -eq 0 ] || namespace+=(--map-root-user)
calls() { # [state=...] [systemd=no] calls SCRIPT ARGS... -> the calls the script made
  rm -f "$work/calls"
  # shellcheck disable=SC2086 # one word per line
  printf '%s\n' ${state:-} >"$work/state"
  # shellcheck disable=SC2016 # expanded by the inner shell
  "${namespace[@]}" sh -c 'mount -t tmpfs tmpfs /run && { [ "$1" = no ] || mkdir -p /run/systemd/system; } &&
    shift && PATH="$0:$PATH" "$@"' "$work/bin" "${systemd:-yes}" "$work/control/$1" "${@:2}" ||
    fail "$1 ${*:2} failed"
  if [ -f "$work/calls" ]; then tr '\n' ';' <"$work/calls"; fi
}
check_calls() { # [state=...] [systemd=no] check_calls WANT SCRIPT ARGS...
  local got
  got=$(calls "${@:2}")
  [ "$got" = "$1" ] ||
    fail "${state:+state=$state }${systemd:+systemd=$systemd }$2 ${*:3}: calls '$got', want '$1'"
}
dsh='deb-systemd-helper'
reload='systemctl --system daemon-reload;'
restart='deb-systemd-invoke try-restart neutracerd.service;'
# First installation: deb-systemd-helper learns the unit; nothing is enabled or started.
check_calls "$dsh debian-installed neutracerd.service;$dsh update-state neutracerd.service;$reload" \
  postinst configure ''
systemd=no check_calls "$dsh debian-installed neutracerd.service;$dsh update-state neutracerd.service;" \
  postinst configure ''
# Upgrades: restarted only if running (try-restart); links made again only if it was enabled.
state=installed check_calls "$dsh debian-installed neutracerd.service;$dsh unmask neutracerd.service;\
$dsh --quiet was-enabled neutracerd.service;$dsh update-state neutracerd.service;$reload$restart" \
  postinst configure 0.0.1
state='installed enabled' check_calls "$dsh debian-installed neutracerd.service;\
$dsh unmask neutracerd.service;$dsh --quiet was-enabled neutracerd.service;\
$dsh enable neutracerd.service;$dsh update-state neutracerd.service;$reload$restart" \
  postinst configure 0.0.1
check_calls "$dsh debian-installed neutracerd.service;$dsh update-state neutracerd.service;$reload$restart" \
  postinst configure 0.0.1
check_calls 'deb-systemd-invoke stop neutracerd.service;' prerm remove
check_calls '' prerm upgrade "$version"
check_calls "$reload" postrm remove
check_calls "$dsh purge neutracerd.service;" postrm purge
if grep -nE '^[^#]*systemctl' "$work/control/postinst" "$work/control/prerm" "$work/control/postrm" |
  grep -v 'systemctl --system daemon-reload'; then
  fail "maintainer scripts call systemctl for more than daemon-reload (deb-systemd-helper/-invoke)"
fi
ok "install never enables or starts the service; upgrade restarts it only if running; remove stops it"

[ "$failures" -eq 0 ]
