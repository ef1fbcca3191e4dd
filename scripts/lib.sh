# shellcheck shell=bash
# Helpers shared by the scripts in this directory; source it, don't run it.
# Written for a fresh Debian machine where only Go is installed: no make, no
# git configuration, maybe not even go on PATH.

# log prints a step heading to stderr.
log() { printf '\n==> %s\n' "$*" >&2; }

# note prints a remark to stderr.
note() { printf 'note: %s\n' "$*" >&2; }

# die prints an error to stderr and exits 1.
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# find_go puts the Go toolchain on PATH: the one already there, else the
# standard tarball location.
find_go() {
	if ! command -v go >/dev/null 2>&1; then
		if [[ -x /usr/local/go/bin/go ]]; then
			PATH="/usr/local/go/bin:$PATH"
		else
			die "go is not installed (looked on PATH and in /usr/local/go/bin)"
		fi
	fi
	export PATH
}

# need_pkg installs the Debian packages given that are not installed yet,
# as root or through sudo. It fails when it cannot.
need_pkg() {
	local missing=() pkg
	for pkg in "$@"; do
		dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
	done
	((${#missing[@]} == 0)) && return 0
	local sudo=()
	if ((EUID != 0)); then
		if command -v sudo >/dev/null 2>&1; then
			sudo=(sudo)
		else
			printf 'error: need Debian packages %s: not root and no sudo\n' "${missing[*]}" >&2
			return 1
		fi
	fi
	log "installing Debian packages: ${missing[*]}"
	"${sudo[@]}" apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# need_java makes sure a JDK (17 or later) and Maven are on PATH, installing
# Debian's when they are missing. The interop tooling (interop/) needs both.
need_java() {
	if ! command -v java >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
		need_pkg openjdk-17-jdk-headless || die "the interop tooling needs a JDK (17 or later)"
	fi
	if ! command -v mvn >/dev/null 2>&1; then
		need_pkg maven || die "the interop tooling needs Maven"
	fi
}

# confluent_python prints a python3 that has Confluent's Python client
# with its Avro support: Debian's python3-confluent-kafka (and
# python3-requests, which its registry client uses), and fastavro from
# PyPI (Debian has none) in a virtualenv that sees the system's packages,
# kept under ~/.cache/stoatctl. internal/schemaregistry's test holds the
# in-repo schema registry to that client ($STOATCTL_PYTHON).
confluent_python() {
	local venv=${XDG_CACHE_HOME:-$HOME/.cache}/stoatctl/confluent-python fastavro=1.12.2
	need_pkg python3-confluent-kafka python3-requests python3-venv || return 1
	if ! "$venv/bin/python" -c 'import confluent_kafka.schema_registry.avro' >/dev/null 2>&1; then
		log "setting up Confluent's Python client (fastavro $fastavro from PyPI)" >&2
		/usr/bin/python3 -m venv --system-site-packages "$venv" >&2 &&
			"$venv/bin/pip" install -q "fastavro==$fastavro" >&2 || return 1
	fi
	printf '%s\n' "$venv/bin/python"
}

# interop_classpath prints the class path of the interop Maven project
# (interop/pom.xml): its compiled classes and every jar it depends on,
# resolved from Maven Central into the local Maven cache. It builds the
# project first when the sources or the pom are newer than the last build,
# so a warm cache costs nothing. Run from the repository root.
interop_classpath() {
	local root=interop target=interop/target stamp=interop/target/.built
	need_java
	if [[ ! -f $stamp || -n $(find "$root/pom.xml" "$root/src" -newer "$stamp" -print -quit 2>/dev/null) ]]; then
		log "building the interop tooling (Maven)" >&2
		# package also writes target/classpath.txt (see the pom).
		mvn -q -B -Dstyle.color=never -f "$root/pom.xml" package -DskipTests >&2 ||
			die "building interop/ with Maven failed"
		touch "$stamp"
	fi
	printf '%s:%s\n' "$PWD/$target/classes" "$(cat "$target/classpath.txt")"
}
