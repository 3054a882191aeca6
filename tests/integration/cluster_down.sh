#!/usr/bin/env bash
# cluster_down.sh: ctest fixture cleanup: stops the shared control plane and removes its state.
set -euo pipefail
: "${TESSEL_ROOT:?}" "${TESSEL_CLUSTER_DIR:?}"
"$TESSEL_ROOT/tools/cluster/cluster.sh" down
