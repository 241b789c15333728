#!/usr/bin/env bash
# The daemon (tensile serve) with real job processes on one shared CPU
# device (docs/DAEMON.md; issue 10's acceptance):
#   - three jobs whose vanilla footprints sum to more than the device (it
#     holds 70 % of the sum) all finish, each with the final parameters of
#     its solo run, bit for bit; a job that cannot fit meanwhile is queued
#     with a reason and starts once another ends;
#   - the global footprint in the shared ledger never exceeds the capacity;
#   - kill -9 of a job leaves the daemon and the others running, and its
#     region returns;
#   - killing the daemon leaves the jobs running; a new daemon on the same
#     socket recovers them from their reconnections (RESUME), and they finish
#     with their solo parameters;
#   - a job that stops reporting is timed out and reclaimed;
#   - a malformed message gets an ERROR and the daemon goes on serving;
#   - a daemon that reads nothing for a while (busy planning) loses no job.
set -uo pipefail
bin=${1:?usage: test_daemon.sh TENSILE}
bin=$(readlink -f "$bin")
. "$(dirname "$0")/cli/checks.sh"
tmp=$(mktemp -d)
export XDG_RUNTIME_DIR=$tmp
sock=$tmp/tensile/tensiled.sock
cleanup() {
  pkill -9 -f -- "--socket $sock" 2>/dev/null
  pkill -9 -f "serve --device-memory .* --socket $sock" 2>/dev/null
  [ -n "${dpid:-}" ] && kill -9 "$dpid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/tensile" && chmod 700 "$tmp/tensile"

# jobs: small shapes, one kernel thread (the solo runs use the same)
A=(--model resnet18 --batch 8 --image-size 32)
B=(--model vgg11 --batch 8 --image-size 32)
C=(--model cnn --batch 32)
solo() { "$bin" run --policy vanilla "$@" --dataset synthetic --threads 1 --quiet --json 2>/dev/null | tail -1 |
         python3 -c "import json,sys; print(json.load(sys.stdin)['vanilla']['param_checksum'])"; }
vfoot() { "$bin" info "$@" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['vanilla_peak_footprint_bytes'])"; }
cap=$(( ( $(vfoot "${A[@]}") + $(vfoot "${B[@]}") + $(vfoot "${C[@]}") ) * 7 / 10 ))
status_json() { "$bin" status --socket "$sock" --json 2>/dev/null; }
jobfield() { # ID FIELD: a job's field in the status (empty if none)
  status_json | python3 -c "import json,sys
d=json.load(sys.stdin)
for j in d['jobs']:
    if j['id']==$1: print(j.get('$2',''))"; }
wait_for() { # SECONDS COMMAND...: until the command succeeds
  local n=$(( $1 * 10 )); shift
  for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.1; done; return 1; }
state_is() { [ "$(jobfield "$1" state)" = "$2" ]; }
iterations_reach() { [ "$(jobfield "$1" iterations_done)" -ge "$2" ] 2>/dev/null; }
start_daemon() {
  "$bin" serve --device-memory "$cap" --socket "$sock" --pcie-gbps 2 --foreground "$@" \
    >>"$tmp/daemon.log" 2>&1 &
  dpid=$!
  wait_for 10 test -S "$sock"
}
submit() { "$bin" submit --socket "$sock" --dataset synthetic "$@" 2>&1 | sed -n 's/^job \([0-9]*\) submitted.*/\1/p'; }

# ---- 1. three jobs in 70 % of their vanilla footprints, a fourth queued
start_daemon
check "the daemon listens on a 0600 socket" "$([ "$(stat -c %a "$sock")" = 600 ] && echo 1 || echo 0)"
# A runs long enough (40 iterations, a few seconds) that B is seen queued
# by a STATUS poll even on a loaded machine
ja=$(submit "${A[@]}" --iterations 40)
jb=$(submit "${B[@]}" --iterations 12)
jc=$(submit "${C[@]}" --iterations 12)
check "three jobs submitted ($ja $jb $jc)" "$([ -n "$ja" ] && [ -n "$jb" ] && [ -n "$jc" ] && echo 1 || echo 0)"
wait_for 5 state_is "$jb" queued
why=$(jobfield "$jb" reason)
check "a job that does not fit waits, told why: '$why'" "$(grep -q "starts when a job ends" <<<"$why" && echo 1 || echo 0)"
for j in $ja $jb $jc; do wait_for 240 state_is "$j" done; done
for j in $ja $jb $jc; do check "job $j done" "$(state_is "$j" done && echo 1 || echo 0)"; done
check "job $ja's parameters equal its solo run's" "$([ "$(jobfield "$ja" param_checksum)" = "$(solo "${A[@]}" --iterations 40)" ] && echo 1 || echo 0)"
check "job $jb's parameters equal its solo run's" "$([ "$(jobfield "$jb" param_checksum)" = "$(solo "${B[@]}" --iterations 12)" ] && echo 1 || echo 0)"
check "job $jc's parameters equal its solo run's" "$([ "$(jobfield "$jc" param_checksum)" = "$(solo "${C[@]}" --iterations 12)" ] && echo 1 || echo 0)"
peak=$(status_json | python3 -c "import json,sys; print(json.load(sys.stdin)['global']['peak_footprint_bytes'])")
check "the shared ledger's peak footprint $peak <= capacity $cap" "$([ "$peak" -le "$cap" ] && [ "$peak" -gt 0 ] && echo 1 || echo 0)"
check "the log has a line per event" "$(grep -q "job $jb vgg11:8 queued" "$tmp/daemon.log" && grep -q "job $jb vgg11:8 admitted" "$tmp/daemon.log" && echo 1 || echo 0)"

# ---- 2. a malformed message: ERROR, and the daemon serves on
reply=$(python3 - "$sock" <<'EOF'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(struct.pack('<IHHII', 0x504c5354, 2, 1, 2, 0) + b'{}')
h = s.recv(16); print(struct.unpack('<IHHII', h)[2] if len(h) == 16 else 0)
EOF
)
check "a message of version 2 is answered ERROR (type $reply)" "$([ "$reply" = 3 ] && echo 1 || echo 0)"
expect_exit 0 "the daemon serves on after it" "$bin" status --socket "$sock"

# ---- 3. kill -9 of a job: its region returns, the others go on
jv=$(submit "${A[@]}" --iterations 400)
jw=$(submit "${C[@]}" --iterations 30)
wait_for 60 state_is "$jv" running
wait_for 60 iterations_reach "$jv" 2
vpid=$(grep -o "job $jv resnet18:8 (resnet18, batch 8, 400 iterations, pid [0-9]*" "$tmp/daemon.log" | grep -o "[0-9]*$")
kill -9 "$vpid"
wait_for 20 state_is "$jv" failed
check "the killed job is failed: $(jobfield "$jv" reason)" "$(state_is "$jv" failed && echo 1 || echo 0)"
check "its region returned" "$([ "$(jobfield "$jv" region_bytes)" = 0 ] && echo 1 || echo 0)"
wait_for 120 state_is "$jw" done
check "the other job finished" "$(state_is "$jw" done && echo 1 || echo 0)"
check "job $jw's parameters equal its solo run's" "$([ "$(jobfield "$jw" param_checksum)" = "$(solo "${C[@]}" --iterations 30)" ] && echo 1 || echo 0)"

# ---- 4. the daemon killed: the jobs go on and resume under the next one
jx=$(submit "${C[@]}" --iterations 150)
wait_for 60 iterations_reach "$jx" 3
kill -9 "$dpid"; { wait "$dpid"; } 2>/dev/null
sleep 2
xpid=$(grep -o "job $jx cnn:32 (cnn, batch 32, 150 iterations, pid [0-9]*" "$tmp/daemon.log" | grep -o "[0-9]*$")
check "the job runs on without its daemon" "$(kill -0 "$xpid" 2>/dev/null && echo 1 || echo 0)"
start_daemon
wait_for 30 grep -q "job $jx cnn:32 resumed" "$tmp/daemon.log"
check "a new daemon recovers the job from its reconnection" "$(grep -q "job $jx cnn:32 resumed" "$tmp/daemon.log" && echo 1 || echo 0)"
wait_for 120 state_is "$jx" done
check "the resumed job finished with its solo parameters" "$([ "$(jobfield "$jx" param_checksum)" = "$(solo "${C[@]}" --iterations 150)" ] && echo 1 || echo 0)"

# ---- 5. a silent job is timed out and reclaimed
kill "$dpid"; wait "$dpid" 2>/dev/null
start_daemon --job-timeout 2
jy=$(submit "${C[@]}" --iterations 500)
wait_for 60 iterations_reach "$jy" 2
ypid=$(grep -o "job $jy cnn:32 (cnn, batch 32, 500 iterations, pid [0-9]*" "$tmp/daemon.log" | tail -1 | grep -o "[0-9]*$")
kill -STOP "$ypid"
wait_for 20 state_is "$jy" failed
check "a job silent past the timeout is reclaimed: $(jobfield "$jy" reason)" "$(state_is "$jy" failed && [ "$(jobfield "$jy" region_bytes)" = 0 ] && echo 1 || echo 0)"
# ---- 6. a daemon that reads nothing for 15 s (as while it plans on a
# loaded machine) loses no job: its reports wait, coalesced, and the job
# trains on (it once blocked 10 s on a full socket, then took the daemon
# for dead and was killed as a job whose connection had closed)
kill "$dpid"; wait "$dpid" 2>/dev/null
start_daemon
D=(--model densenet121 --batch 2 --image-size 32)  # 2,409 latencies a report
jz=$(submit "${D[@]}" --iterations 60)
wait_for 120 iterations_reach "$jz" 2
zpid=$(grep -o "job $jz densenet121:2 (densenet121, batch 2, 60 iterations, pid [0-9]*" "$tmp/daemon.log" | tail -1 | grep -o "[0-9]*$")
kill -STOP "$dpid"
sleep 15
kill -CONT "$dpid"
wait_for 180 state_is "$jz" done
check "a job goes on while its daemon reads nothing for 15 s: $(jobfield "$jz" state) $(jobfield "$jz" reason)" "$(state_is "$jz" done && echo 1 || echo 0)"
zlog=$(ls "$tmp"/tensile/job-"$zpid".log 2>/dev/null)
check "it never took the daemon for gone (log ${zlog:-missing})" "$([ -n "$zlog" ] && ! grep -q "the daemon is gone" "$zlog" && echo 1 || echo 0)"
expect_exit 0 "tensile serve --stop" "$bin" serve --stop --socket "$sock"
wait "$dpid" 2>/dev/null
check "the daemon ended" "$(kill -0 "$dpid" 2>/dev/null && echo 0 || echo 1)"
[ $fails != 0 ] && { echo "--- daemon log"; cat "$tmp/daemon.log"; }
checks_done
