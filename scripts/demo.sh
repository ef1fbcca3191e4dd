#!/usr/bin/env bash
# Builds bin/stoatctl and runs the demo: the "word-count" example topology
# on the live engine against the embedded Kafka broker (no cluster needed).
# kcat, an independent Kafka client, produces the sentences and reads the
# committed counts back; then SIGINT stops the engine with a final commit.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

need_pkg ca-certificates gcc libc6-dev kcat

log "building bin/stoatctl"
./scripts/build.sh

log "bin/stoatctl topology describe word-count"
bin/stoatctl topology describe word-count

log "bin/stoatctl run -t word-count (embedded broker on a free port)"
out=$(mktemp)
bin/stoatctl run -t word-count --broker-port 0 --http 127.0.0.1:0 --log-level warn >"$out" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -f "$out"' EXIT
for _ in $(seq 100); do
	[[ -s $out ]] && break
	sleep 0.1
done
addr=$(head -n1 "$out")
[[ -n $addr ]] || die "stoatctl run printed no broker address"

log "kcat produces three lines to topic lines"
printf 'a:the quick brown fox\nb:the lazy dog\nc:the end\n' | kcat -b "$addr" -t lines -P -K:

log "kcat reads word-counts, read committed (word: count)"
want=9 # one count record per word occurrence
for _ in $(seq 60); do
	n=$(kcat -b "$addr" -t word-counts -C -o beginning -e -q -X isolation.level=read_committed -f '%k\n' 2>/dev/null | grep -c . || true)
	((n >= want)) && break
	sleep 0.5
done
kcat -b "$addr" -t word-counts -C -o beginning -e -q -X isolation.level=read_committed -s value=Q -f '%k: %s\n'

log "stopping the engine (SIGINT: final barrier, commit, clean close)"
kill -INT "$pid"
wait "$pid"
trap - EXIT
rm -f "$out"
log "done"
