#!/usr/bin/env bash
# Builds bin/stoatctl and runs the demo: the "word-count" example topology on
# its sample input, through the test driver. (When the live engine lands,
# this runs it against an embedded broker instead.)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

log "building bin/stoatctl"
./scripts/build.sh

log "bin/stoatctl version"
bin/stoatctl version

log "bin/stoatctl topology describe word-count"
bin/stoatctl topology describe word-count

log "bin/stoatctl topology try word-count"
bin/stoatctl topology try word-count
