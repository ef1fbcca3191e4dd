#!/usr/bin/env bash
# A real, single-node Apache Kafka 4.4 broker on demand, for the tests that
# need the real thing rather than the embedded one. By default it runs in
# KRaft combined mode (one process is broker and controller) from the jars
# Maven brings from Maven Central (interop/pom.xml), on free loopback ports,
# with its data in a folder of its own.
#
#   scripts/kafka.sh start [--split|--secure] [--watch PID]
#                                          format, start, wait, print the bootstrap address
#   scripts/kafka.sh status                print the address and PID(s); exit 1 unless all run
#   scripts/kafka.sh stop                  stop what this script started, remove its folder
#   scripts/kafka.sh kill                  SIGKILL the broker, keep its folder (fault tests)
#   scripts/kafka.sh await-fence [SECS]    split mode: wait (default 60 s) until the controller
#                                          has fenced the broker killed last
#   scripts/kafka.sh restart [--watch PID] start the broker again on its folder and ports, unformatted
#
# STOATCTL_KAFKA_DIR  the broker's folder (default: $TMPDIR/stoatctl-kafka);
#                     give each broker its own to run several at once
# --watch PID         stop the broker (and controller) when process PID ends
#                     (test binaries use it, so a test that dies leaves no
#                     broker behind)
# --split             two processes instead of one: a dedicated controller
#                     (node 2) and a broker (node 1), as production KRaft
#                     clusters run. kill and restart then act on the broker
#                     alone while the controller lives on, so the controller
#                     fences the dead broker once its session times out
#                     (broker.session.timeout.ms=3000 here, 9000 by default)
#                     and the restarted broker registers afresh; stop and
#                     status cover both. The folder remembers the mode.
# --secure            a secured broker, as production clusters run: a
#                     SASL_SSL listener (SCRAM-SHA-256 and -512, and
#                     OAUTHBEARER with unsecured tokens, sub the principal; its address
#                     is the one printed), an SSL listener that requires a
#                     client certificate (mTLS; address in bootstrap-mtls),
#                     both with a certificate of a CA made here with openssl
#                     (tls/ca.pem, tls/ca.key), and the StandardAuthorizer:
#                     super user admin, every other principal needs ACLs.
#                     SCRAM users are created when the log dir is formatted:
#                     admin, app and noacl, with the passwords in users
#                     (name=password lines); tls/app.pem and tls/app.key are
#                     a client certificate for CN=app, whose principal the
#                     mTLS listener maps to User:app. Inter-broker and
#                     controller traffic stays on loopback PLAINTEXT
#                     listeners whose ANONYMOUS principal is a super user.
#
# The folder holds server.properties (the broker's, or the combined node's),
# the log dirs (data/), broker.log (earlier incarnations' logs as
# broker.NANOS.log after a restart), broker.pid and bootstrap; in split mode
# also controller.properties, controller-data/, controller.log and
# controller.pid. `stop` kills only the PIDs recorded there, and only while
# each is still this folder's java process.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

DIR=${STOATCTL_KAFKA_DIR:-${TMPDIR:-/tmp}/stoatctl-kafka}
START_TIMEOUT=${STOATCTL_KAFKA_START_TIMEOUT:-90}
# The controller fences a broker whose heartbeats stop for this long, in
# split mode. Kafka's 9 s default would make every kill of a fault test
# wait that long; 3 s with a heartbeat every 0.5 s keeps six heartbeats per
# session, enough on a loaded machine.
SPLIT_SESSION_MS=3000
SPLIT_HEARTBEAT_MS=500

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

# split succeeds when the folder holds a split-mode cluster (start --split
# wrote a controller's properties there).
split() { [[ -f $DIR/controller.properties ]]; }

# alive NAME succeeds when the PID recorded in NAME.pid is alive and is
# ours: a java process whose command line names this folder's properties
# file for it. A PID reused by another process does not count. NAME is
# broker (whose properties are server.properties) or controller.
alive() {
	local name=$1 pid props
	props=$(props_of "$name")
	[[ -f $DIR/$name.pid ]] || return 1
	pid=$(<"$DIR/$name.pid")
	[[ -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$props"
}

# running succeeds when the broker (the combined node, or split mode's
# broker) is alive.
running() { alive broker; }

props_of() {
	case $1 in
	broker) echo "$DIR/server.properties" ;;
	controller) echo "$DIR/controller.properties" ;;
	*) die "internal: no process named $1" ;;
	esac
}

# free_port prints a loopback port nothing listens on, below the kernel's
# ephemeral range (ip_local_port_range, 32768-60999 by default): a port
# from that range can be handed to any other process's listener on port 0
# (every embedded-broker test makes some) between this check and the
# broker's bind, which made a secured start, four ports, fail three
# attempts in a row. Bash's /dev/tcp connects to test it: a refused
# connection means the port is free.
free_port() {
	local port low=32768
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
	((low > 12000)) || die "the ephemeral port range starts at $low: no room below it for the broker's ports"
	for _ in $(seq 200); do
		port=$((10000 + RANDOM % (low - 10000)))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	die "no free loopback port found"
}

# common_properties prints the settings every node shares. In split mode
# the controller needs them as much as the broker: topics are created on
# the controller, with its defaults (replication factor, partitions).
common_properties() {
	cat <<-EOF
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
		# Test records carry event times near 1970 (fixtures count from 0),
		# and Kafka's retention check (30 s after start, then every 5 min)
		# deletes them from every topic with time retention, in the middle
		# of whichever test runs then: migrate's tests lost their source
		# changelogs that way. No test waits for retention, so it never
		# runs here (log.initial.task.delay.ms, which Kafka keeps for
		# tests, also delays the recovery-point checkpoint: a killed broker
		# recovers its whole log, which is correct, and small here).
		log.retention.check.interval.ms=86400000
		log.initial.task.delay.ms=86400000
		# The log cleaner deletes by time too: on each pass it drops
		# expired segments, the active one included, of every topic with
		# cleanup.policy=compact,delete (windowed changelogs, whose
		# retention is the window's plus a day), within seconds of a
		# record from 1970 landing there. It passes again after this
		# backoff when it found nothing to compact, which in tests, whose
		# segments never roll, is always.
		log.cleaner.backoff.ms=86400000
		# Topics are created on purpose, as in most production clusters, so a
		# missing topic is an error rather than a new empty topic.
		auto.create.topics.enable=false
		num.partitions=1
	EOF
}

write_properties() {
	local port=$1 cport=$2
	{
		cat <<-EOF
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
		EOF
		common_properties
	} >"$DIR/server.properties"
}

# write_split_properties writes split mode's two files: the controller's
# (node 2, listening on cport only) and the broker's (node 1, finding the
# controller through cport).
write_split_properties() {
	local port=$1 cport=$2
	{
		cat <<-EOF
			# Written by scripts/kafka.sh --split: the dedicated controller.
			process.roles=controller
			node.id=2
			controller.quorum.bootstrap.servers=127.0.0.1:$cport
			listeners=CONTROLLER://127.0.0.1:$cport
			controller.listener.names=CONTROLLER
			listener.security.protocol.map=CONTROLLER:PLAINTEXT
			log.dirs=$DIR/controller-data
			broker.session.timeout.ms=$SPLIT_SESSION_MS
			broker.heartbeat.interval.ms=$SPLIT_HEARTBEAT_MS
		EOF
		common_properties
	} >"$DIR/controller.properties"
	{
		cat <<-EOF
			# Written by scripts/kafka.sh --split: the broker.
			process.roles=broker
			node.id=1
			controller.quorum.bootstrap.servers=127.0.0.1:$cport
			listeners=PLAINTEXT://127.0.0.1:$port
			advertised.listeners=PLAINTEXT://127.0.0.1:$port
			controller.listener.names=CONTROLLER
			inter.broker.listener.name=PLAINTEXT
			listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
			log.dirs=$DIR/data
			broker.session.timeout.ms=$SPLIT_SESSION_MS
			broker.heartbeat.interval.ms=$SPLIT_HEARTBEAT_MS
		EOF
		common_properties
	} >"$DIR/server.properties"
}

# SECURE_USERS are the SCRAM users --secure creates, name=password.
SECURE_USERS=(admin=admin-secret-4b1 app=app-secret-7c2 noacl=noacl-secret-9d3)

# make_pki writes the secured broker's CA, its certificate and a client
# certificate (CN=app) into $DIR/tls, with openssl: RSA keys, PKCS#8 and
# unencrypted, as Kafka's PEM keystores read them.
make_pki() {
	local tls=$DIR/tls
	mkdir -p "$tls"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tls/ca.key" -out "$tls/ca.pem" -days 3 \
		-subj /CN=stoatctl-test-ca >/dev/null 2>&1 || die "openssl could not make the test CA"
	local name ext
	for name in broker app; do
		ext="subjectAltName=IP:127.0.0.1,DNS:localhost"
		[[ $name == app ]] && ext="extendedKeyUsage=clientAuth"
		openssl req -newkey rsa:2048 -nodes -keyout "$tls/$name.key" -out "$tls/$name.csr" -subj "/CN=$name" >/dev/null 2>&1 ||
			die "openssl could not make the $name key"
		openssl x509 -req -in "$tls/$name.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial -days 3 \
			-extfile <(echo "$ext") -out "$tls/$name.pem" >/dev/null 2>&1 || die "openssl could not sign the $name certificate"
	done
	# Kafka's PEM keystore file: the key, then the certificate chain.
	cat "$tls/broker.key" "$tls/broker.pem" >"$tls/broker-keystore.pem"
}

# write_secure_properties writes the secured node's properties: SASL_SSL
# on port, mTLS on mport, the inter-broker listener on iport.
write_secure_properties() {
	local port=$1 cport=$2 mport=$3 iport=$4 tls=$DIR/tls
	{
		cat <<-EOF
			# Written by scripts/kafka.sh --secure: one node, broker and controller.
			process.roles=broker,controller
			node.id=1
			controller.quorum.bootstrap.servers=127.0.0.1:$cport
			listeners=SASL_SSL://127.0.0.1:$port,SSL://127.0.0.1:$mport,INTERNAL://127.0.0.1:$iport,CONTROLLER://127.0.0.1:$cport
			advertised.listeners=SASL_SSL://127.0.0.1:$port,SSL://127.0.0.1:$mport,INTERNAL://127.0.0.1:$iport
			controller.listener.names=CONTROLLER
			inter.broker.listener.name=INTERNAL
			listener.security.protocol.map=SASL_SSL:SASL_SSL,SSL:SSL,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT
			log.dirs=$DIR/data
			ssl.keystore.type=PEM
			ssl.keystore.location=$tls/broker-keystore.pem
			ssl.truststore.type=PEM
			ssl.truststore.location=$tls/ca.pem
			listener.name.ssl.ssl.client.auth=required
			ssl.principal.mapping.rules=RULE:^CN=([^,]*).*\$/\$1/,DEFAULT
			sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER
			listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
			listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
			# OAUTHBEARER with Kafka's default validator of unsecured
			# tokens (alg none): the principal is the token's sub claim.
			# Tests only: a production broker validates signed tokens.
			listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";
			authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
			super.users=User:admin;User:ANONYMOUS
		EOF
		common_properties
	} >"$DIR/server.properties"
}

# start_secure starts the --secure broker.
start_secure() {
	command -v openssl >/dev/null 2>&1 || need_pkg openssl || die "--secure needs openssl for its certificates"
	java_cmd 1g
	local port cport mport iport cluster attempt scram=() u
	for u in "${SECURE_USERS[@]}"; do
		scram+=(--add-scram "SCRAM-SHA-512=[name=${u%%=*},password=${u#*=}]" --add-scram "SCRAM-SHA-256=[name=${u%%=*},password=${u#*=}]")
	done
	for attempt in 1 2 3; do
		rm -rf "$DIR"
		mkdir -p "$DIR/data"
		make_pki
		printf '%s\n' "${SECURE_USERS[@]}" >"$DIR/users"
		# Four distinct ports: Kafka refuses two listeners on one.
		port=$(free_port)
		cport=$(free_port)
		while [[ $cport == "$port" ]]; do cport=$(free_port); done
		mport=$(free_port)
		while [[ $mport == "$port" || $mport == "$cport" ]]; do mport=$(free_port); done
		iport=$(free_port)
		while [[ $iport == "$port" || $iport == "$cport" || $iport == "$mport" ]]; do iport=$(free_port); done
		write_secure_properties "$port" "$cport" "$mport" "$iport"
		cluster=$("${JAVA[@]}" kafka.tools.StorageTool random-uuid)
		"${JAVA[@]}" kafka.tools.StorageTool format --standalone -t "$cluster" "${scram[@]}" \
			-c "$DIR/server.properties" >"$DIR/format.log" 2>&1 ||
			{ cat "$DIR/format.log" >&2; die "formatting the secured broker's log dir failed"; }
		if launch broker "$port" "${JAVA[@]}"; then
			echo "127.0.0.1:$mport" >"$DIR/bootstrap-mtls"
			watchdog
			cat "$DIR/bootstrap"
			return 0
		fi
		note "a port of the broker was taken before it bound it (attempt $attempt of 3); trying other ports"
	done
	die "the secured broker could not bind its ports in three attempts (log: $DIR/broker.log)"
}

# Options of start and restart, parsed by parse_args into these globals.
WATCH=""
SPLIT=""
SECURE=""

# parse_args reads --watch PID (start and restart) and --split (start
# only); $1 names the command for the error.
parse_args() {
	local cmd=$1
	shift
	while (($#)); do
		case $1 in
		--watch) WATCH=${2:?--watch needs a PID}; shift 2 ;;
		--split)
			[[ $cmd == start ]] || die "kafka.sh $cmd: --split is an option of start (the folder remembers the mode)"
			SPLIT=1
			shift
			;;
		--secure)
			[[ $cmd == start ]] || die "kafka.sh $cmd: --secure is an option of start"
			SECURE=1
			shift
			;;
		*) die "kafka.sh $cmd: unknown argument $1" ;;
		esac
	done
}

# JAVA is the command line that runs a Kafka class, set by java_cmd with
# the heap given. Split mode's two JVMs get 512 MB each, so the pair takes
# no more than the combined node's 1 GB.
# $2, the logging configuration, defaults to interop/kafka-log4j2.yaml.
JAVA=()
java_cmd() {
	local xmx=$1 logcfg=${2:-interop/kafka-log4j2.yaml} cp
	cp=$(interop_classpath)
	JAVA=(java -Xms256m "-Xmx$xmx" -XX:+UseG1GC -Djava.awt.headless=true
		"-Dlog4j2.configurationFile=$PWD/$logcfg" -cp "$cp")
}

start() {
	parse_args start "$@"
	if running; then
		cat "$DIR/bootstrap"
		return 0
	fi
	[[ -n $SPLIT && -n $SECURE ]] && die "kafka.sh start: --split and --secure do not go together"
	if [[ -n $SPLIT ]]; then
		start_split
		return
	fi
	if [[ -n $SECURE ]]; then
		start_secure
		return
	fi
	java_cmd 1g
	# A free port can be taken by another process between the check and
	# the broker's bind (two brokers starting at once, a test's listener):
	# the start is then tried again on other ports, up to three times.
	local port cport cluster attempt
	for attempt in 1 2 3; do
		# The controller of a split-mode cluster left in the folder goes
		# with it.
		stop_process controller
		rm -rf "$DIR"
		mkdir -p "$DIR/data"
		port=$(free_port)
		cport=$(free_port)
		while [[ $cport == "$port" ]]; do cport=$(free_port); done
		write_properties "$port" "$cport"
		cluster=$("${JAVA[@]}" kafka.tools.StorageTool random-uuid)
		"${JAVA[@]}" kafka.tools.StorageTool format --standalone -t "$cluster" \
			-c "$DIR/server.properties" >"$DIR/format.log" 2>&1 ||
			{ cat "$DIR/format.log" >&2; die "formatting the broker's log dir failed"; }
		if launch broker "$port" "${JAVA[@]}"; then
			watchdog
			cat "$DIR/bootstrap"
			return 0
		fi
		note "a port of the broker was taken before it bound it (attempt $attempt of 3); trying other ports"
	done
	die "the broker could not bind its ports in three attempts (log: $DIR/broker.log)"
}

# start_split starts split mode's controller, then its broker, on log dirs
# formatted with one cluster id: the controller's as a single-voter quorum
# (--standalone), the broker's plainly, as Kafka's documentation formats
# a dedicated controller and a broker.
start_split() {
	# The controller logs its fences at INFO (await-fence reads them).
	java_cmd 512m interop/kafka-controller-log4j2.yaml
	local controller_java=("${JAVA[@]}")
	java_cmd 512m
	# A start that fails half-way stops the controller it started.
	trap 'stop_process controller' EXIT
	local port cport cluster attempt rc
	for attempt in 1 2 3; do
		stop_process controller
		rm -rf "$DIR"
		mkdir -p "$DIR/data" "$DIR/controller-data"
		port=$(free_port)
		cport=$(free_port)
		while [[ $cport == "$port" ]]; do cport=$(free_port); done
		write_split_properties "$port" "$cport"
		cluster=$("${JAVA[@]}" kafka.tools.StorageTool random-uuid)
		"${JAVA[@]}" kafka.tools.StorageTool format --standalone -t "$cluster" \
			-c "$DIR/controller.properties" >"$DIR/format-controller.log" 2>&1 ||
			{ cat "$DIR/format-controller.log" >&2; die "formatting the controller's log dir failed"; }
		"${JAVA[@]}" kafka.tools.StorageTool format -t "$cluster" \
			-c "$DIR/server.properties" >"$DIR/format.log" 2>&1 ||
			{ cat "$DIR/format.log" >&2; die "formatting the broker's log dir failed"; }
		rc=0
		launch controller "$cport" "${controller_java[@]}" || rc=$?
		if ((rc == 0)); then
			launch broker "$port" "${JAVA[@]}" || rc=$?
			if ((rc == 0)); then
				trap - EXIT
				watchdog
				cat "$DIR/bootstrap"
				return 0
			fi
		fi
		note "a port of the cluster was taken before it bound it (attempt $attempt of 3); trying other ports"
	done
	die "the cluster could not bind its ports in three attempts (logs: $DIR/controller.log, $DIR/broker.log)"
}

# launch NAME PORT JAVA... runs the broker or the controller (NAME) on its
# properties in the folder and waits until it answers on PORT; the broker's
# address goes to the folder's bootstrap file. It returns 2 when the
# process could not bind its ports, and stops the script on any other
# failure.
launch() {
	local name=$1 port=$2 props
	shift 2
	local java=("$@")
	props=$(props_of "$name")
	# A restart keeps the log of the incarnation before it, for the
	# post-mortem of a fault test.
	if [[ -f $DIR/$name.log ]]; then
		mv "$DIR/$name.log" "$DIR/$name.$(date +%s%N).log"
	fi
	# setsid: the process outlives the shell that started it, and a Ctrl-C
	# in that shell does not reach it.
	setsid "${java[@]}" "-Dkafka.logs.dir=$DIR" kafka.Kafka "$props" \
		>"$DIR/$name.log" 2>&1 </dev/null &
	echo $! >"$DIR/$name.pid"
	local pid=$!

	local deadline=$((SECONDS + START_TIMEOUT))
	until grep -q 'Kafka Server started' "$DIR/$name.log" 2>/dev/null &&
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null; then
			if grep -q 'Address already in use' "$DIR/$name.log"; then
				# start tries other ports; a restart cannot.
				return 2
			fi
			tail -n 30 "$DIR/$name.log" >&2
			die "the $name exited while starting (log: $DIR/$name.log)"
		fi
		if ((SECONDS >= deadline)); then
			tail -n 30 "$DIR/$name.log" >&2
			kill "$pid" 2>/dev/null || true
			die "the $name did not answer within ${START_TIMEOUT}s (log: $DIR/$name.log)"
		fi
		sleep 0.2
	done
	if [[ $name == broker ]]; then
		echo "127.0.0.1:$port" >"$DIR/bootstrap"
	fi
}

# watchdog, with --watch PID, starts a watchdog, detached like the broker:
# once PID ends it stops the broker and any controller (through this
# script, so the same PID checks apply).
watchdog() {
	[[ -n $WATCH ]] || return 0
	setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done
		STOATCTL_KAFKA_DIR=$2 exec "$3" stop' _ "$WATCH" "$DIR" "$PWD/scripts/kafka.sh" \
		>/dev/null 2>&1 </dev/null &
}

# stop_process NAME stops the broker or the controller if it is ours and
# alive: SIGTERM, then SIGKILL after 30 s.
stop_process() {
	local name=$1 pid
	alive "$name" || return 0
	pid=$(<"$DIR/$name.pid")
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 300); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		note "the $name (PID $pid) did not stop within 30s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
}

stop() {
	# The broker first: a broker whose controller is gone waits for it
	# while shutting down.
	stop_process broker
	stop_process controller
	# Only a folder this script laid out is removed.
	if [[ -f $DIR/server.properties ]]; then
		rm -rf "$DIR"
	fi
}

# The controller's log line for a broker it fences because its heartbeats
# stopped (Kafka's ReplicationControlManager, logged at INFO; the log4j
# configuration keeps that logger at INFO).
FENCE_LINE='Fencing broker 1 at epoch [0-9]* because its session has timed out'

# kill_broker SIGKILLs the broker and waits until it is gone; the folder
# stays, so restart can bring it back as a crashed broker comes back. In
# split mode only the broker dies; the number of fences the controller
# has logged so far is kept for await-fence.
kill_broker() {
	running || die "kafka.sh kill: no broker of ours is running (dir $DIR)"
	if split; then
		fences >"$DIR/fences-before-kill"
	fi
	local pid
	pid=$(<"$DIR/broker.pid")
	kill -KILL "$pid" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	die "the broker (PID $pid) survived SIGKILL for 10s"
}

# fences prints how many times the controller has fenced the broker for
# a timed-out session.
fences() { grep -c -- "$FENCE_LINE" "$DIR/controller.log" 2>/dev/null || true; }

# await_fence waits until the controller has fenced the broker killed
# last: then its partitions are leaderless while it is down, and a restart
# registers a new incarnation from a clean slate, rather than racing the
# controller's view of the old one.
await_fence() {
	local secs=${1:-60}
	split || die "kafka.sh await-fence: only a split-mode cluster (start --split) has a controller apart from the broker (dir $DIR)"
	alive controller || die "kafka.sh await-fence: the controller is not running (dir $DIR)"
	running && die "kafka.sh await-fence: the broker is running; kill it first"
	[[ -f $DIR/fences-before-kill ]] || die "kafka.sh await-fence: no kill recorded in $DIR"
	local before deadline=$((SECONDS + secs))
	before=$(<"$DIR/fences-before-kill")
	until (($(fences) > before)); do
		if ((SECONDS >= deadline)); then
			die "the controller did not fence the killed broker within ${secs}s (log: $DIR/controller.log)"
		fi
		sleep 0.1
	done
}

# restart starts the broker again on its folder, ports and data, without
# formatting: what a broker does after a crash. In split mode the
# controller must still be running.
restart() {
	parse_args restart "$@"
	running && die "kafka.sh restart: the broker is running (dir $DIR)"
	[[ -f $DIR/server.properties && -f $DIR/bootstrap ]] || die "kafka.sh restart: no broker folder at $DIR (start one first)"
	local port xmx=1g
	if split; then
		alive controller || die "kafka.sh restart: the controller of the split cluster is not running (dir $DIR)"
		xmx=512m
	fi
	port=$(sed 's/.*://' "$DIR/bootstrap")
	java_cmd "$xmx"
	launch broker "$port" "${JAVA[@]}" ||
		die "the broker could not bind its port again, $port: another process holds it (log: $DIR/broker.log)"
	watchdog
	cat "$DIR/bootstrap"
}

status() {
	local rc=0 line
	if running; then
		line="$(cat "$DIR/bootstrap" 2>/dev/null || echo starting) pid $(<"$DIR/broker.pid")"
	else
		line="broker not running"
		rc=1
	fi
	if split; then
		if alive controller; then
			line+=", controller pid $(<"$DIR/controller.pid")"
		else
			line+=", controller not running"
			rc=1
		fi
	fi
	if ((rc == 0)) || split; then
		printf '%s dir %s\n' "$line" "$DIR"
	else
		echo "not running (dir $DIR)"
	fi
	return "$rc"
}

case ${1:-} in
start) shift; start "$@" ;;
stop) stop ;;
kill) kill_broker ;;
await-fence) shift; await_fence "$@" ;;
restart) shift; restart "$@" ;;
status) status ;;
*) usage ;;
esac
