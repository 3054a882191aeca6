#!/usr/bin/env bash
# security_test.sh: hostile callers against the real tessel-scheduler (issue 37, defects 2-4),
# with bounds, not timings: the scheduler's peak RSS (VmHWM in /proc/PID/status) and whether
# probes answer within the Deployment's own 5 s probe timeout.
#   - 40 TLS connections trickling a header byte every 1.5 s, from another address, against the
#     HTTPS port, and 40 plain ones against the probe port: 5 of 5 probes answer on the probe
#     port, and on the HTTPS port's /healthz; the trickling connections are closed by the server;
#   - a 200 MB body on every method, 7 at once, and a header line that never ends: refused
#     (413 or closed), never buffered: peak RSS stays under 300 MB;
#   - 16 gRPC Simulate streams without a token, each announcing 60 MiB and holding back its last
#     byte (4 connections of 4, and 1 of 16): peak RSS stays under 300 MB, streams ended;
#   - a flood of random bearer tokens from another address: system:masters scrapes /metrics and
#     calls tesselctl queues throughout (its token known valid), 4 of 4 each;
#   - Simulate of a 6000-node cluster and of a 17 MiB snapshot are refused; a small one runs
#     (in a child process).
source "$(dirname "$0")/lib.sh"
: "${TESSEL_CTL_BIN:?}"
it_begin security

hostile() { python3 "$TESSEL_ROOT/tests/integration/hostile.py" "$@"; }
{ read -r secure; read -r admin; read -r probe; } < <(free_ports 3)
it_start_scheduler main --leader-elect=false --secure-port "$secure" --cert-dir "$IT_WORK/certs" \
  --admin-port "$admin" --probe-port "$probe"
it_wait 60 "scheduler ready" scheduler_ready "$SCHED_PORT_main"
pid=$SCHED_PID_main
peak_mib() { awk '/^VmHWM:/ { print int($2 / 1024) }' "/proc/$pid/status"; }
rss_mib() { awk '/^VmRSS:/ { print int($2 / 1024) }' "/proc/$pid/status"; }
say "RSS at start: $(rss_mib) MiB (peak $(peak_mib) MiB)"
admin_token=$(cat "$TESSEL_CLUSTER_DIR/admin.token")  # system:masters
ca="$IT_WORK/certs/tessel-scheduler.crt"

# --- slow clients (defect 3) ---
hostile trickle --port "$secure" --tls --count 40 --seconds 24 --source 127.0.0.2 >"$IT_WORK/trickle-https" &
t1=$!
hostile trickle --port "$probe" --count 40 --seconds 24 --source 127.0.0.2 >"$IT_WORK/trickle-probe" &
t2=$!
sleep 6  # every trickling connection open and holding what it can
on_probe=$(hostile probes --port "$probe" --count 5 --timeout 5 --path /healthz)
on_ready=$(hostile probes --port "$probe" --count 5 --timeout 5 --path /readyz)
on_https=$(hostile probes --port "$secure" --tls --count 5 --timeout 5 --path /healthz)
wait $t1 $t2
say "40+40 trickling clients: probe port /healthz $on_probe/5, /readyz $on_ready/5, HTTPS /healthz $on_https/5;" \
  "trickling connections closed by the server: $(cat "$IT_WORK/trickle-https") (HTTPS), $(cat "$IT_WORK/trickle-probe") (probe port)"
[[ $on_probe == 5 && $on_ready == 5 ]] || fail "the probe port answered $on_probe/5 and $on_ready/5 probes"
[[ $on_https == 5 ]] || fail "the HTTPS /healthz answered $on_https/5 probes while 40 clients trickled"
closed=$(awk '{ print $2 }' "$IT_WORK/trickle-https")
((closed >= 20)) || fail "the HTTPS port closed only $closed trickling connections: they hold their workers"

# --- oversized bodies and headers (defect 2, HTTPS) ---
out=$(hostile bodies --port "$secure" --count 7 --mib 150)
say "200 MB bodies, one per method:"$'\n'"$out"
grep -q " 200 \| 200$" <<<"$out" && fail "a request with a 200 MB body was answered 200: $out"
out=$(hostile header --port "$secure" --mib 150)
say "a header line that never ends: $out"
[[ $out == *"HTTP/1.1 200"* ]] && fail "an endless header was answered 200"
peak=$(peak_mib)
say "peak RSS after bodies and headers: $peak MiB"
((peak < 300)) || fail "peak RSS $peak MiB: bodies or headers were buffered"

# --- many gRPC streams without a token (defect 2, admin port) ---
out=$(hostile h2streams --port "$admin" --connections 4 --streams 4 --mib 60 --seconds 8)
say "16 unauthenticated Simulate streams of 60 MiB (4 connections): $out"
out=$(hostile h2streams --port "$admin" --connections 1 --streams 16 --mib 60 --seconds 8)
say "16 unauthenticated Simulate streams of 60 MiB (1 connection): $out"
sched_token=$(cat "$TESSEL_CLUSTER_DIR/scheduler.token")  # authenticated, not allowed to simulate
out=$(hostile h2streams --port "$admin" --connections 4 --streams 4 --mib 60 --seconds 8 --token "$sched_token")
say "16 Simulate streams of 60 MiB from a user without the right: $out"
peak=$(peak_mib)
say "peak RSS after the streams: $peak MiB"
((peak < 300)) || fail "peak RSS $peak MiB: gRPC messages were buffered before authorization"
kill -0 "$pid" || fail "the scheduler died"

# --- a flood of random tokens (defect 4) ---
scrape() { [[ $(curl -s -o /dev/null -w '%{http_code}' --cacert "$ca" -H "Authorization: Bearer $admin_token" \
  "https://127.0.0.1:$secure/metrics") == 200 ]]; }
ctl() { "$TESSEL_CTL_BIN" --kubeconfig "$TESSEL_CLUSTER_DIR/admin.kubeconfig" --ca "$ca" --server "127.0.0.1:$admin" "$@"; }
scrape || fail "system:masters cannot scrape /metrics before the flood"
ctl queues >/dev/null || fail "system:masters cannot list queues before the flood"
hostile flood --port "$secure" --seconds 26 --rate 25 --source 127.0.0.2 >"$IT_WORK/flood" &
f1=$!
sleep 12  # past the 10 s the answers above are cached for
scrapes=0 calls=0
for _ in 1 2 3 4; do
  scrape && scrapes=$((scrapes + 1))
  ctl queues >/dev/null 2>&1 && calls=$((calls + 1))
  sleep 3
done
wait $f1
say "random-token flood: $(cat "$IT_WORK/flood"); system:masters scrapes $scrapes/4, tesselctl queues $calls/4"
((scrapes == 4 && calls == 4)) || fail "a known token was throttled by the flood: scrapes $scrapes/4, queues $calls/4"
grep -q "429" "$IT_WORK/flood" || fail "the flood was never throttled: $(cat "$IT_WORK/flood")"

# --- Simulate within budgets (defect 5) ---
python3 - "$IT_WORK/huge.json" <<'PY'
import json, sys
nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n-{i}"},
          "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}} for i in range(6000)]
json.dump({"apiVersion": "v1", "kind": "List", "items": nodes}, open(sys.argv[1], "w"))
PY
if out=$(ctl simulate "$IT_WORK/huge.json" 2>&1); then fail "a 6000-node simulation was run in the leader"; fi
[[ $out == *"too large to simulate here: 6000 nodes"* ]] || fail "simulate of 6000 nodes: $out"
head -c $((17 << 20)) /dev/zero | tr '\0' ' ' >"$IT_WORK/big.json"
if out=$(ctl simulate "$IT_WORK/big.json" 2>&1); then fail "a 17 MiB snapshot was taken"; fi
say "simulate refused: a 6000-node cluster; a 17 MiB snapshot ($out)"
ctl simulate "$TESSEL_ROOT/bench/examples/gpu-cluster.json" >/dev/null || fail "a small simulation failed"

peak=$(peak_mib)
((peak < 300)) || fail "peak RSS $peak MiB"
say "peak RSS over the whole suite: $peak MiB"
it_stop_scheduler main
exit 0
