#!/usr/bin/env bash
# Builds the Debian package with cpack and checks it: control fields and scripts, the exact file
# list and modes, the conffile, no build paths, the unit (systemd-analyze verify), the journal
# catalog, the binary and config from an unpacked root, and what the maintainer scripts ask of
# systemctl. Usage: check_deb.sh BUILD_DIR SOURCE_DIR
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
  ./usr/share/doc/neutracerd/copyright
  ./usr/share/doc/neutracerd/runbook.md
  ./usr/share/neutracerd/alertmanager/alertmanager.yml
  ./usr/share/neutracerd/prometheus/neutracer-alerts.yml
  ./usr/share/neutracerd/prometheus/prometheus.yml
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

"$source/tests/cli/unit_verify.sh" "$unit" "$root/usr/sbin/neutracerd" || fail "unit does not verify"

# The catalog compiles, and journalctl lists one entry per MESSAGE_ID in it.
journalctl --root="$root" --update-catalog
ids=$(grep -cE '^-- [0-9a-f]{32}$' "$root/usr/lib/systemd/catalog/neutracerd.catalog")
listed=$(journalctl --root="$root" --list-catalog | grep -c 'neutracerd:' || true)
if [ "$ids" -eq 0 ] || [ "$listed" -ne "$ids" ]; then
  fail "catalog: $listed entries listed, $ids in the file"
fi
ok "journal catalog: $listed entries"

# ---- maintainer scripts, against a systemctl that records what it is asked ------------------
mkdir -p "$work/bin"
for tool in systemctl journalctl; do
  printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n' "$tool" "$work" >"$work/bin/$tool"
  chmod +x "$work/bin/$tool"
done
# The scripts only talk to systemd when it runs (/run/systemd/system): give them one in a
# private mount namespace.
namespace=(unshare --mount)
[ "$(id -u)" -eq 0 ] || namespace+=(--map-root-user)
calls() { # calls SCRIPT ARGS... -> the systemctl/journalctl calls the script made
  rm -f "$work/calls"
  # shellcheck disable=SC2016 # expanded by the inner shell
  "${namespace[@]}" sh -c 'mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system &&
    PATH="$0:$PATH" "$@"' "$work/bin" "$work/control/$1" "${@:2}" || fail "$1 ${*:2} failed"
  if [ -f "$work/calls" ]; then tr '\n' ';' <"$work/calls"; fi
}
check_calls() { # check_calls WANT SCRIPT ARGS...
  local got
  got=$(calls "${@:2}")
  [ "$got" = "$1" ] || fail "$2 ${*:3}: calls '$got', want '$1'"
}
check_calls 'systemctl daemon-reload;journalctl --update-catalog;' postinst configure ''
check_calls 'systemctl daemon-reload;systemctl try-restart neutracerd.service;journalctl --update-catalog;' \
  postinst configure 0.0.1
check_calls 'systemctl disable --now neutracerd.service;' prerm remove
check_calls '' prerm upgrade "$version"
check_calls 'systemctl daemon-reload;journalctl --update-catalog;' postrm remove
check_calls 'systemctl daemon-reload;journalctl --update-catalog;' postrm purge
ok "install never enables or starts the service; upgrade restarts it only if running"

[ "$failures" -eq 0 ]
