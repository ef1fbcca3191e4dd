#!/usr/bin/env bash
# Everything CI checks, in order: formatting, go vet, staticcheck, the
# tests under the race detector on the embedded broker, the real-Kafka tier
# (the same tests that can meet both, on a real Apache Kafka 4.4 broker),
# and a short fuzz run of every Fuzz target.
# Installs the Debian packages the tests need when they are missing.
#
#   FUZZTIME=3s      how long each fuzz target runs (0 skips fuzzing)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
find_go

# staticcheck's release for Go 1.26 (2026.2.2); `go run pkg@version` needs
# no change to go.mod.
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME=${FUZZTIME:-3s}

start=$SECONDS
declare -a timings=()
step() {
	local name=$1 t0=$SECONDS
	shift
	log "$name"
	"$@"
	timings+=("$(printf '%-12s %4ds' "$name" $((SECONDS - t0)))")
}

setup() {
	# The race detector needs cgo, so a C compiler.
	if ! command -v gcc >/dev/null 2>&1; then
		need_pkg gcc libc6-dev || die "the race detector needs gcc"
	fi
	# The RocksDB state stores link RocksDB's C library, and their version
	# probe is C++.
	need_pkg g++ librocksdb-dev || die "the RocksDB state stores need g++ and librocksdb-dev"
	# Shell completion tests drive real shells; they skip shells that are
	# missing, so these are wanted, not needed.
	need_pkg bash-completion zsh fish || note "shell completion tests will skip the shells that are missing"
	# kcat (librdkafka) is the independent Kafka client of the black-box
	# broker tests. They skip without it on a developer's machine, but fail
	# under CI, so that a CI run cannot pass without having run them.
	need_pkg kcat || note "the kcat black-box tests will skip, or fail under CI"
	# tmux runs the full-screen watch view in a test (send-keys,
	# capture-pane); like kcat, skipped without it, failed under CI.
	need_pkg tmux || note "the tmux test of watch watermarks will skip, or fail under CI"
	# promtool (Debian's prometheus package) checks the shipped alert
	# rules and the engine's /metrics; without it those checks skip on a
	# developer's machine and fail under CI.
	need_pkg prometheus || note "promtool is missing: the rules step and the /metrics check will skip, or fail under CI"
	# openssl makes the CA and the certificates of the secured real broker
	# (scripts/kafka.sh start --secure), which the real tier's
	# TestSecuredKafka runs against; a broker that cannot start fails it.
	need_pkg openssl || note "openssl is missing: the secured real-Kafka tests will fail"
	# Confluent's Python client, the independent client the in-repo schema
	# registry is held to; its test fails under CI without it.
	STOATCTL_PYTHON=$(confluent_python) && export STOATCTL_PYTHON ||
		note "Confluent's Python client is missing: the schema registry's client test will skip, or fail under CI"
	# Java and Maven: the real Apache Kafka broker and the Kafka Streams
	# runner of the interop tests (interop/, built from Maven Central).
	need_java
	interop_classpath >/dev/null
	go version
	go env CGO_ENABLED | grep -qx 1 || die "cgo is disabled (CGO_ENABLED=$(go env CGO_ENABLED)); the race detector needs it"
}

check_gofmt() {
	local files
	files=$(gofmt -l .)
	if [[ -n $files ]]; then
		printf 'these files are not gofmt-ed (run gofmt -w on them):\n%s\n' "$files" >&2
		return 1
	fi
}

# fuzz_one runs one fuzz target from its package's fuzz-instrumented test
# binary (built once per package by fuzz_smoke), in the package's folder,
# so that a failing input lands under its testdata/fuzz as with go test
# -fuzz. Go's fuzzer sometimes ends a time-boxed run with "context deadline
# exceeded" when a worker is slow to answer at the deadline, with no
# failing input: that is the harness, not the code, so it is retried once.
# A real failure writes its input under testdata/fuzz and fails at once.
fuzz_one() {
	local name=$1 dir=$2 bin=$3 cache=$4 out attempt
	out=$(mktemp)
	for attempt in 1 2; do
		if (cd "$dir" && "$bin" -test.run='^$' -test.fuzz="^${name}\$" -test.fuzztime="$FUZZTIME" -test.fuzzcachedir="$cache") 2>&1 | tee "$out"; [[ ${PIPESTATUS[0]} == 0 ]]; then
			rm -f "$out"
			return 0
		fi
		if grep -q 'Failing input written to' "$out" || ! grep -q 'context deadline exceeded' "$out"; then
			break
		fi
		note "fuzz $name: the fuzzer hit its own deadline without a failing input; retrying once ($attempt)"
	done
	rm -f "$out"
	return 1
}

# fuzz_smoke runs every func FuzzXxx(f *testing.F) in a test file, wherever
# it is. Each package's test binary is built once with the fuzzer's
# instrumentation (go test -c -fuzz) and run once per target: go test
# -fuzz would link it anew for every target, which took longer than the
# fuzzing. The corpus cache is the one go test -fuzz uses.
fuzz_smoke() {
	if [[ $FUZZTIME == 0 ]]; then
		note "FUZZTIME=0: fuzzing skipped"
		return 0
	fi
	local file dir name bin pkg bins count=0 rc=0 gocache
	bins=$(mktemp -d)
	gocache=$(go env GOCACHE)
	while IFS= read -r dir; do
		pkg=$(go list "./${dir#./}")
		bin=$bins/$(echo "$pkg" | tr / _).test
		go test -c -fuzz=. -o "$bin" "./${dir#./}" || { rc=1; continue; }
		for file in "$dir"/*_test.go; do
			while IFS= read -r name; do
				echo "--- fuzz $name in $dir for $FUZZTIME"
				fuzz_one "$name" "$dir" "$bin" "$gocache/fuzz/$pkg" || rc=1
				count=$((count + 1))
			done < <(grep -oE '^func Fuzz[A-Za-z0-9_]*\(' "$file" | sed -E 's/^func //; s/\($//')
		done
	done < <(grep -rlE --include='*_test.go' --exclude-dir=.git --exclude-dir=testdata '^func Fuzz[A-Za-z0-9_]*\(' . | xargs -n1 dirname | sort -u)
	rm -rf "$bins"
	echo "fuzzed $count targets"
	return "$rc"
}

# The real-Kafka tier: the tests written for both brokers
# (internal/kafkatest.Start) run again, against real Apache Kafka 4.4
# brokers that scripts/kafka.sh starts for them; the rest skip there.
# cmd's TestSecuredKafka starts a secured broker of its own
# (kafkatest.Secure: SASL_SSL, mTLS, ACLs) and fails if it cannot.
# Tests that share a broker run one at a time (-p 1), because each test
# clears it first. There are three brokers, each with a share of about
# the same length: engine, replay, cmd and migrate's way back on one;
# half of migrate's Kafka Streams cutovers and the rest of migrate on
# another; the other half and interop on the third.
# migrateKSB is the half of migrate's Kafka Streams tests that runs on the
# third broker (the newest cutovers, each with two Kafka Streams runs).
migrateKSB='^(TestKafkaStreamsCutoverFromStateDir|TestKafkaStreamsRefusals|TestKafkaStreamsCutoverJoins|TestKafkaStreamsCutoverVersioned|TestKafkaStreamsCutoverForeignKeyJoin|TestKafkaStreamsCutoverGraceJoin)$'
real_kafka_tier() {
	need_java
	local addr maddr kaddr dir mdir kdir mlog klog mpid kpid
	dir=$(mktemp -d)
	mdir=$(mktemp -d)
	kdir=$(mktemp -d)
	addr=$(STOATCTL_KAFKA_DIR=$dir/kafka scripts/kafka.sh start --watch $$)
	maddr=$(STOATCTL_KAFKA_DIR=$mdir/kafka scripts/kafka.sh start --watch $$)
	kaddr=$(STOATCTL_KAFKA_DIR=$kdir/kafka scripts/kafka.sh start --watch $$)
	echo "real Kafka at $addr, at $maddr and at $kaddr for migrate and interop"
	# engine, interop and migrate run whole (their embedded-only tests skip at
	# once); of replay and cmd only the tests that meet a broker run, the
	# rest ran in the test step already. The shares are balanced by the
	# packages' times (fresh-clone CI of dd85b64, 2026-12-05, two brokers
	# then): engine about 650 s, replay and cmd about 100 s, migrate's way
	# back about 110 s on one broker; interop about 210 s; the rest of
	# migrate, whose Kafka Streams cutovers wait on Kafka Streams to
	# start, run and leave its group, about 1140 s, now split over two.
	#
	# The tier runs without the race detector: the test step ran every one
	# of these tests under it already, and what this tier adds is the real
	# broker's behaviour, not another schedule of the same goroutines.
	# Without it the tier takes about half the CPU, which on two cores is
	# most of its time. The timeout leaves room for a slow machine.
	local rc=0 mrc=0 krc=0
	mlog=$(mktemp)
	klog=$(mktemp)
	(
		export STOATCTL_TEST_KAFKA=real STOATCTL_TEST_BOOTSTRAP=$maddr
		rc=0
		go test -count=1 -timeout 30m -skip "^TestKafkaStreamsReverse\$|$migrateKSB" ./migrate/ || rc=$?
		exit "$rc"
	) >"$mlog" 2>&1 &
	mpid=$!
	(
		export STOATCTL_TEST_KAFKA=real STOATCTL_TEST_BOOTSTRAP=$kaddr
		rc=0
		go test -count=1 -timeout 30m -run "$migrateKSB" ./migrate/ || rc=$?
		go test -count=1 -timeout 30m ./interop/ || rc=$?
		exit "$rc"
	) >"$klog" 2>&1 &
	kpid=$!
	(
		export STOATCTL_TEST_KAFKA=real STOATCTL_TEST_BOOTSTRAP=$addr
		rc=0
		go test -count=1 -timeout 30m ./engine/ || rc=$?
		go test -count=1 -run '^(TestCapture|TestRecorded)' ./replay/ || rc=$?
		go test -count=1 -run '^(TestRunOnEmbeddedBrokerWithKcat|TestRunThreeInstancesWithKcat|TestRunWordCountOnTwoInstances|TestReplayRecordThenReplay|TestTopicRead|TestTopicReadFollow|TestReplayRecordOut|TestSecuredKafka)$' ./cmd/ || rc=$?
		go test -count=1 -timeout 30m -run '^TestKafkaStreamsReverse$' ./migrate/ || rc=$?
		exit "$rc"
	) || rc=$?
	wait "$mpid" || mrc=$?
	wait "$kpid" || krc=$?
	echo "--- migrate (but its way back and the cutovers of the third broker), against the second broker:"
	cat "$mlog"
	echo "--- migrate's other cutovers and interop, against the third broker:"
	cat "$klog"
	rm -f "$mlog" "$klog"
	[[ $mrc == 0 ]] || rc=$mrc
	[[ $krc == 0 ]] || rc=$krc
	local d pid
	for d in "$dir" "$mdir" "$kdir"; do
		pid=$(<"$d/kafka/broker.pid")
		STOATCTL_KAFKA_DIR=$d/kafka scripts/kafka.sh stop
		# stop must leave no broker behind.
		if kill -0 "$pid" 2>/dev/null; then
			note "scripts/kafka.sh stop left the broker (PID $pid) running"
			rc=1
		fi
	done
	return "$rc"
}

# promtool_rules checks deploy/prometheus/rules.yaml and runs its unit
# tests, which fire each alert.
promtool_rules() {
	if ! command -v promtool >/dev/null 2>&1; then
		if [[ -n ${CI:-} ]]; then
			die "promtool is not installed (Debian's prometheus package); CI must run the rule checks"
		fi
		note "promtool is not installed (Debian's prometheus package): the alert rules were NOT checked"
		return 0
	fi
	promtool check rules deploy/prometheus/rules.yaml
	(cd deploy/prometheus && promtool test rules rules_test.yaml)
}

step setup setup
step gofmt check_gofmt
step vet go vet ./...
step staticcheck go run "$STATICCHECK" ./...
step rules promtool_rules
# The tests' summary lists every skipped test with its reason, so that a
# run that skipped some (a tool missing) does not read as a clean ok.
#
# -parallel 4: the long engine tests that may run side by side
# (kafkatest.Parallel) mostly wait, on a child process, a broker or a
# transaction timeout; two at a time (GOMAXPROCS) left most of that wait
# unshared.
run_tests() {
	go test -race -count=1 -parallel 4 -json ./... | go run ./scripts/testsummary
}

# The fuzz run goes beside the real tier, at the lowest CPU priority: that
# tier spends most of its time waiting on Kafka, Kafka Streams and session
# timeouts, and the fuzzer takes the idle CPU without slowing it. Its
# output is printed once both are done.
real_kafka_and_fuzz() {
	local flog fpid rc=0 frc=0 t0=$SECONDS ft
	flog=$(mktemp)
	(
		renice -n 19 -p "$BASHPID" >/dev/null
		r=0
		fuzz_smoke || r=$?
		echo "fuzz took $((SECONDS - t0))s"
		exit "$r"
	) >"$flog" 2>&1 &
	fpid=$!
	real_kafka_tier || rc=$?
	wait "$fpid" || frc=$?
	log "fuzz (ran beside the real tier)"
	cat "$flog"
	ft=$(sed -n 's/^fuzz took \([0-9]*\)s$/\1/p' "$flog")
	rm -f "$flog"
	timings+=("$(printf '%-12s %4ds (beside real-kafka)' fuzz "${ft:-0}")")
	[[ $frc == 0 ]] || rc=$frc
	return "$rc"
}

step test run_tests
step real-kafka real_kafka_and_fuzz

log "done in $((SECONDS - start))s"
printf '%s\n' "${timings[@]}" >&2
