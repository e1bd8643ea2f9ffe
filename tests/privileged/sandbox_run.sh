#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the real daemon inside the unit's sandbox, as far as it can be rebuilt without systemd as
# PID 1 (this test runs where a plain shell is PID 1; with systemd, `systemd-run --wait -p ...`
# would apply the unit itself). Rebuilt from the configured unit: the capability bounding set
# and no-new-privileges (setpriv), a private mount namespace with every file system read-only
# (ProtectSystem=strict), empty /home, /root and /tmp (ProtectHome, PrivateTmp), /proc mounted
# with hidepid=invisible (ProtectProc=invisible), /proc/sys and /sys read-only and /proc/kallsyms
# unreadable (ProtectKernelTunables). The daemon must then trace a stand-in CUDA process that
# runs as another user (nobody) and serve exact counts for it, and tell systemd READY, WATCHDOG
# and STOPPING. strace records every system call and socket family it used (sd_notify and an
# OOM alert for the journal included): all must be in the unit's SystemCallFilter= and
# RestrictAddressFamilies=. Not rebuilt here: IPAddressDeny= and DevicePolicy= (cgroup BPF
# programs that systemd attaches) and the seccomp filter itself.
# Usage: sandbox_run.sh NEUTRACERD NEUTRACER_SCENARIO CONFIGURED_UNIT
# shellcheck disable=SC2015,SC2317 # ok() always succeeds; cleanup runs from the trap
set -u
daemon=$(realpath "$1")
scenario=$(realpath "$2")
unit=$3
work=$(mktemp -d)
# The sandbox hides /home, /root, /tmp and /var/tmp, where a build tree may lie: run an installed
# copy, as the unit runs /usr/sbin/neutracerd.
installed=$(mktemp -d /var/lib/neutracer-sandbox-test.XXXXXX)
cp "$daemon" "$installed/neutracerd"
daemon=$installed/neutracerd
daemon_pid=
scenario_pid=
notify_pid=
cleanup() {
  [ -n "$notify_pid" ] && kill "$notify_pid" 2>/dev/null
  [ -n "$scenario_pid" ] && kill "$scenario_pid" 2>/dev/null
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work" "$installed"
}
trap cleanup EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
ok() { echo "ok: $*"; }
if [ "$(id -u)" -ne 0 ]; then
  echo "FAIL: needs root (mounts, BPF)"
  exit 1
fi

setting() { sed -n "s/^$1=//p" "$unit"; }
# "CAP_SYS_ADMIN CAP_BPF" -> "-all,+sys_admin,+bpf" (setpriv's spelling)
bounding=-all
for cap in $(setting CapabilityBoundingSet); do
  bounding+=",+$(tr '[:upper:]' '[:lower:]' <<<"${cap#CAP_}")"
done
for expected in ProtectSystem=strict ProtectHome=yes PrivateTmp=yes ProtectProc=invisible \
  ProtectKernelTunables=yes NoNewPrivileges=yes; do
  grep -qx "$expected" "$unit" || fail "the unit no longer has $expected: update this test"
done

# ---- the sandbox -------------------------------------------------------------------------
port=$((20000 + RANDOM % 10000))
# sd_notify as systemd would receive it (an abstract socket: the sandbox hides /run and /tmp).
notify_socket="@neutracer-sandbox-$$"
python3 -c '
import socket, sys
receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
receiver.bind("\0" + sys.argv[1][1:])
with open(sys.argv[2], "a") as out:
    while True:
        out.write(receiver.recv(4096).decode() + "\n")
        out.flush()' "$notify_socket" "$work/notify" &
notify_pid=$!
: >"$work/inaccessible"
chmod 000 "$work/inaccessible"
exec 3>"$work/strace" # opened before / goes read-only
# shellcheck disable=SC2016 # expanded by the inner shell
unshare --mount --propagation private sh -c '
  set -e
  inaccessible=$1 bounding=$2
  shift 2
  # ProtectSystem=strict: every mount read-only, except the API file systems.
  for target in $(findmnt -rn -o TARGET | grep -vE "^/(proc|sys|dev)(/|$)"); do
    mount -o remount,bind,ro "$target" 2>/dev/null || mount --bind -o ro "$target" "$target"
  done
  mount -t proc -o hidepid=invisible proc /proc
  for dir in /proc/sys /sys; do mount --bind "$dir" "$dir" && mount -o remount,bind,ro "$dir"; done
  for file in /proc/kallsyms /proc/kcore; do
    [ ! -e "$file" ] || mount --bind "$inaccessible" "$file"
  done
  # Last: $inaccessible lies under /tmp.
  for dir in /home /root /tmp /var/tmp; do mount -t tmpfs -o mode=755 tmpfs "$dir"; done
  exec strace -f -qq -o /dev/fd/3 setpriv --bounding-set="$bounding" --inh-caps=-all \
    --no-new-privs -- "$@"' sandbox "$work/inaccessible" "$bounding" \
  env NOTIFY_SOCKET="$notify_socket" WATCHDOG_USEC=2000000 \
  "$daemon" --listen "127.0.0.1:$port" --scan-interval 500ms >"$work/daemon.log" 2>&1 &
daemon_pid=$! # strace (unshare and sh exec it), whose child runs the daemon

metrics() { curl -s --max-time 5 "http://127.0.0.1:$port/metrics"; }
for _ in $(seq 300); do
  metrics >/dev/null && break
  kill -0 "$daemon_pid" 2>/dev/null || break
  sleep 0.2
done
metrics >/dev/null || { fail "the daemon did not serve; log:"; cat "$work/daemon.log"; exit 1; }
ok "serving inside the sandbox (bounding set $bounding)"
traced=$(pgrep -P "$daemon_pid" | head -1) # the daemon itself

# A CUDA process of another user: visible through hidepid=invisible only with CAP_SYS_PTRACE.
# It calls the driver once the daemon shows its series (discovered and probes attached).
chmod 755 "$work"
setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$scenario" ready "wait:$work/go" \
  alloc:1048576:3 launch:sandboxed_kernel:7 oom:1099511627776 sleep:30000 >"$work/scenario.out" 2>&1 &
scenario_pid=$!
for _ in $(seq 300); do
  metrics | grep -q "^neutracer_cuda_memory_used_bytes{pid=\"$scenario_pid\"" && break
  sleep 0.2
done
touch "$work/go"
want_launches="neutracer_cuda_kernel_launches_total{pid=\"$scenario_pid\",comm=\"neutracer-scena\",gpu=\"unknown\",kernel=\"sandboxed_kernel\"} 7"
want_memory="neutracer_cuda_memory_used_bytes{pid=\"$scenario_pid\",comm=\"neutracer-scena\",gpu=\"unknown\",kind=\"device\"} 3145728"
for _ in $(seq 150); do
  metrics | grep -qxF "$want_launches" && metrics | grep -qxF "$want_memory" && break
  sleep 0.2
done
scrape=$(metrics)
if grep -qxF "$want_launches" <<<"$scrape" && grep -qxF "$want_memory" <<<"$scrape"; then
  ok "traced pid $scenario_pid (user nobody): 7 launches, 3 MiB of device memory"
else
  fail "no exact counts for pid $scenario_pid; scrape:"
  grep -E "pid=\"$scenario_pid\"|probe_attach_errors|discovery_unreadable" <<<"$scrape"
  cat "$work/daemon.log"
fi

# The daemon's effective capabilities are the bounding set, nothing more.
effective=$(capsh --decode="$(sed -n 's/^CapEff:\s*//p' "/proc/$traced/status")" |
  sed 's/.*=//' | tr ',' '\n' | sort | tr '\n' ' ')
wanted=$(setting CapabilityBoundingSet | tr '[:upper:]' '[:lower:]' | tr ' ' '\n' | sort | tr '\n' ' ')
[ "$effective" = "$wanted" ] && ok "effective capabilities: $effective" ||
  fail "effective capabilities '$effective', want '$wanted'"

# Control: the same /proc, seen by a third user (not in group 0, which hidepid exempts):
# the process is hidden without CAP_SYS_PTRACE and visible with it.
seen=()
for cap in "" +sys_ptrace; do
  # shellcheck disable=SC2016 # expanded by the inner shell
  seen+=("$(unshare --mount --propagation private sh -c \
    'mount -t proc -o hidepid=invisible proc /proc && exec setpriv --reuid=65533 --regid=65533 \
       --clear-groups --inh-caps="-all${1:+,$1}" ${1:+--ambient-caps=$1} -- \
       sh -c "test -d /proc/$0 && echo visible || echo hidden"' "$scenario_pid" "$cap")")
done
[ "${seen[*]}" = "hidden visible" ] &&
  ok "hidepid=invisible: hidden from a third user without CAP_SYS_PTRACE, visible with it" ||
  fail "control: without/with CAP_SYS_PTRACE the process was ${seen[*]}"

kill -TERM "$traced"
wait "$daemon_pid" # strace exits with the daemon's status
status=$?
daemon_pid=
[ "$status" -eq 0 ] && ok "SIGTERM: exit 0" || fail "SIGTERM: exit $status"
for message in READY=1 WATCHDOG=1 STOPPING=1; do
  grep -q "^$message" "$work/notify" || fail "systemd was not told $message"
done
ok "sd_notify: $(grep -oE '^[A-Z]+=1' "$work/notify" | sort -u | tr '\n' ' ')"

# ---- system calls and socket families against the unit -----------------------------------
expand() { # syscall names in the groups and names given
  local item
  for item in "$@"; do
    if [[ $item == @* ]]; then
      # shellcheck disable=SC2046 # one word per name
      expand $(systemd-analyze syscall-filter "$item" | awk 'NR > 1 && $1 !~ /^#/ { print $1 }')
    else
      echo "$item"
    fi
  done
}
allowed=() denied=()
while IFS= read -r line; do
  if [[ $line == "~"* ]]; then
    # shellcheck disable=SC2086
    mapfile -t -O "${#denied[@]}" denied < <(expand ${line#"~"})
  else
    # shellcheck disable=SC2086
    mapfile -t -O "${#allowed[@]}" allowed < <(expand $line)
  fi
done < <(setting SystemCallFilter)
printf '%s\n' "${allowed[@]}" | sort -u >"$work/allowed"
printf '%s\n' "${denied[@]}" | sort -u >"$work/denied"
comm -23 "$work/allowed" "$work/denied" >"$work/permitted"
# The daemon's calls: everything after setpriv executed it.
sed -n "/execve(\"${daemon//\//\\/}\"/,\$p" "$work/strace" >"$work/daemon.strace"
grep -oE '^[0-9]+ +[a-z0-9_]+\(' "$work/daemon.strace" | sed -E 's/^[0-9]+ +//; s/\($//' |
  sort -u >"$work/used"
[ -s "$work/used" ] || fail "strace recorded no system calls"
outside=$(comm -23 "$work/used" "$work/permitted" | tr '\n' ' ')
[ -z "$outside" ] && ok "all $(wc -l <"$work/used") system calls used are in SystemCallFilter=" ||
  fail "system calls outside SystemCallFilter=: $outside"
families=$(grep -oE 'socket\(AF_[A-Z0-9]+' "$work/daemon.strace" | sed 's/socket(//' | sort -u)
for family in $families; do
  grep -qw "$family" <<<"$(setting RestrictAddressFamilies)" ||
    fail "socket family $family is not in RestrictAddressFamilies="
done
ok "socket families used: $(tr '\n' ' ' <<<"$families")"
# Only reads under /sys and /proc/sys (read-only there).
writes=$(grep -E 'open(at)?\(.*"/(sys|proc/sys)/[^"]*".*O_(WRONLY|RDWR)' "$work/daemon.strace")
[ -z "$writes" ] && ok "no writes under /sys or /proc/sys" || fail "writes: $writes"

exit $((failures > 0))
