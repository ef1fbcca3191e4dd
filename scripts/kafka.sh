#!/usr/bin/env bash
# A real, single-node Apache Kafka 4.4 broker on demand, for the tests that
# need the real thing rather than the embedded one. It runs in KRaft
# combined mode (one process is broker and controller) from the jars Maven
# brings from Maven Central (interop/pom.xml), on free loopback ports, with
# its data in a folder of its own.
#
#   scripts/kafka.sh start [--watch PID]   format, start, wait, print the bootstrap address
#   scripts/kafka.sh status                print the address and PID; exit 1 when not running
#   scripts/kafka.sh stop                  stop the broker this script started, remove its folder
#   scripts/kafka.sh kill                  SIGKILL the broker, keep its folder (fault tests)
#   scripts/kafka.sh restart [--watch PID] start it again on its folder and ports, unformatted
#
# STOATCTL_KAFKA_DIR  the broker's folder (default: $TMPDIR/stoatctl-kafka);
#                     give each broker its own to run several at once
# --watch PID         stop the broker when process PID ends (test binaries
#                     use it, so a test that dies leaves no broker behind)
#
# The folder holds server.properties, the log dirs (data/), broker.log
# (earlier incarnations' logs as broker.NANOS.log after a restart),
# broker.pid and bootstrap. `stop` kills only the PID recorded there, and
# only while that PID is still this broker's java process.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

DIR=${STOATCTL_KAFKA_DIR:-${TMPDIR:-/tmp}/stoatctl-kafka}
START_TIMEOUT=${STOATCTL_KAFKA_START_TIMEOUT:-90}

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

# running succeeds when the recorded PID is alive and is our broker: a java
# process whose command line names this folder's server.properties. A PID
# reused by another process does not count.
running() {
	local pid
	[[ -f $DIR/broker.pid ]] || return 1
	pid=$(<"$DIR/broker.pid")
	[[ -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$DIR/server.properties"
}

# free_port prints a loopback port nothing listens on, from the ephemeral
# range's upper half. Bash's /dev/tcp connects to test it: a refused
# connection means the port is free.
free_port() {
	local port
	for _ in $(seq 200); do
		port=$((40000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	die "no free loopback port found"
}

write_properties() {
	local port=$1 cport=$2
	cat >"$DIR/server.properties" <<-EOF
		# Written by scripts/kafka.sh: one node, broker and controller.
		process.roles=broker,controller
		node.id=1
		controller.quorum.bootstrap.servers=127.0.0.1:$cport
		listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
		advertised.listeners=PLAINTEXT://127.0.0.1:$port
		controller.listener.names=CONTROLLER
		inter.broker.listener.name=PLAINTEXT
		listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
		log.dirs=$DIR/data
		# One broker: every replication factor and in-sync minimum is one,
		# or transactions and the internal topics cannot be created.
		default.replication.factor=1
		min.insync.replicas=1
		offsets.topic.replication.factor=1
		transaction.state.log.replication.factor=1
		transaction.state.log.min.isr=1
		share.coordinator.state.topic.replication.factor=1
		share.coordinator.state.topic.min.isr=1
		# Fewer partitions for the internal topics than Kafka's 50 make the
		# first group and the first transaction quick to set up; the
		# protocol is the same.
		offsets.topic.num.partitions=4
		transaction.state.log.num.partitions=4
		# Tests join groups often: no initial rebalance delay.
		group.initial.rebalance.delay.ms=0
		# Topics are created on purpose, as in most production clusters, so a
		# missing topic is an error rather than a new empty topic.
		auto.create.topics.enable=false
		num.partitions=1
	EOF
}

# watch_arg prints the PID of --watch PID, the only option start and
# restart take; $1 names the command for the error.
watch_arg() {
	local cmd=$1 watch=""
	shift
	while (($#)); do
		case $1 in
		--watch) watch=${2:?--watch needs a PID}; shift 2 ;;
		*) die "kafka.sh $cmd: unknown argument $1" ;;
		esac
	done
	echo "$watch"
}

start() {
	local watch
	watch=$(watch_arg start "$@")
	if running; then
		cat "$DIR/bootstrap"
		return 0
	fi
	local cp
	cp=$(interop_classpath)
	local java=(java -Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true
		"-Dlog4j2.configurationFile=$PWD/interop/kafka-log4j2.yaml" -cp "$cp")
	# A free port can be taken by another process between the check and
	# the broker's bind (two brokers starting at once, a test's listener):
	# the start is then tried again on other ports, up to three times.
	local port cport cluster attempt
	for attempt in 1 2 3; do
		rm -rf "$DIR"
		mkdir -p "$DIR/data"
		port=$(free_port)
		cport=$(free_port)
		while [[ $cport == "$port" ]]; do cport=$(free_port); done
		write_properties "$port" "$cport"
		cluster=$("${java[@]}" kafka.tools.StorageTool random-uuid)
		"${java[@]}" kafka.tools.StorageTool format --standalone -t "$cluster" \
			-c "$DIR/server.properties" >"$DIR/format.log" 2>&1 ||
			{ cat "$DIR/format.log" >&2; die "formatting the broker's log dir failed"; }
		if launch "$port" "$watch" "${java[@]}"; then
			return 0
		fi
		note "a port of the broker was taken before it bound it (attempt $attempt of 3); trying other ports"
	done
	die "the broker could not bind its ports in three attempts (log: $DIR/broker.log)"
}

# launch runs the broker on the folder's server.properties, waits until it
# answers on port, and prints its address; with a PID, a watchdog stops it
# once that process ends. It returns 2 when the broker could not bind its
# ports, and stops the script on any other failure.
launch() {
	local port=$1 watch=$2
	shift 2
	local java=("$@")
	# A restart keeps the log of the incarnation before it, for the
	# post-mortem of a fault test.
	if [[ -f $DIR/broker.log ]]; then
		mv "$DIR/broker.log" "$DIR/broker.$(date +%s%N).log"
	fi
	# setsid: the broker outlives the shell that started it, and a Ctrl-C
	# in that shell does not reach it.
	setsid "${java[@]}" "-Dkafka.logs.dir=$DIR" kafka.Kafka "$DIR/server.properties" \
		>"$DIR/broker.log" 2>&1 </dev/null &
	echo $! >"$DIR/broker.pid"
	local pid=$!

	local deadline=$((SECONDS + START_TIMEOUT))
	until grep -q 'Kafka Server started' "$DIR/broker.log" 2>/dev/null &&
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null; then
			if grep -q 'Address already in use' "$DIR/broker.log"; then
				# start tries other ports; a restart cannot.
				return 2
			fi
			tail -n 30 "$DIR/broker.log" >&2
			die "the broker exited while starting (log: $DIR/broker.log)"
		fi
		if ((SECONDS >= deadline)); then
			tail -n 30 "$DIR/broker.log" >&2
			kill "$pid" 2>/dev/null || true
			die "the broker did not answer within ${START_TIMEOUT}s (log: $DIR/broker.log)"
		fi
		sleep 0.2
	done
	echo "127.0.0.1:$port" >"$DIR/bootstrap"

	if [[ -n $watch ]]; then
		# A watchdog, detached like the broker: once PID ends it stops the
		# broker (through this script, so the same PID checks apply).
		setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done
			STOATCTL_KAFKA_DIR=$2 exec "$3" stop' _ "$watch" "$DIR" "$PWD/scripts/kafka.sh" \
			>/dev/null 2>&1 </dev/null &
	fi
	cat "$DIR/bootstrap"
}

stop() {
	if running; then
		local pid
		pid=$(<"$DIR/broker.pid")
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 300); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			note "the broker (PID $pid) did not stop within 30s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	# Only a folder this script laid out is removed.
	if [[ -f $DIR/server.properties ]]; then
		rm -rf "$DIR"
	fi
}

# kill_broker SIGKILLs the broker and waits until it is gone; the folder
# stays, so restart can bring it back as a crashed broker comes back.
kill_broker() {
	running || die "kafka.sh kill: no broker of ours is running (dir $DIR)"
	local pid
	pid=$(<"$DIR/broker.pid")
	kill -KILL "$pid" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	die "the broker (PID $pid) survived SIGKILL for 10s"
}

# restart starts the broker again on its folder, ports and data, without
# formatting: what a broker does after a crash.
restart() {
	local watch
	watch=$(watch_arg restart "$@")
	running && die "kafka.sh restart: the broker is running (dir $DIR)"
	[[ -f $DIR/server.properties && -f $DIR/bootstrap ]] || die "kafka.sh restart: no broker folder at $DIR (start one first)"
	local port cp
	port=$(sed 's/.*://' "$DIR/bootstrap")
	cp=$(interop_classpath)
	launch "$port" "$watch" java -Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true \
		"-Dlog4j2.configurationFile=$PWD/interop/kafka-log4j2.yaml" -cp "$cp" ||
		die "the broker could not bind its port again, $port: another process holds it (log: $DIR/broker.log)"
}

status() {
	if running; then
		printf '%s pid %s dir %s\n' "$(cat "$DIR/bootstrap" 2>/dev/null || echo starting)" "$(<"$DIR/broker.pid")" "$DIR"
	else
		echo "not running (dir $DIR)"
		return 1
	fi
}

case ${1:-} in
start) shift; start "$@" ;;
stop) stop ;;
kill) kill_broker ;;
restart) shift; restart "$@" ;;
status) status ;;
*) usage ;;
esac
