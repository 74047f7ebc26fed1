#!/usr/bin/env bash
# test-containers.sh: the container suite (make test-containers): the kill
# -9 suite, the live scenarios and a broker restart the container way, all
# through `--kafka testcontainers` against the image of kafka-image.sh.
#
# It starts dockerd when no Docker engine answers and the user is root
# (otherwise it says what to start). Ryuk, testcontainers' reaper, needs
# an image from a registry: it is disabled, and every container, network
# and volume labelled org.dedupsim.live is removed before the suite (the
# leftovers of a killed run) and after it, also after a failure.
# Without Docker at all it skips loudly, except under CI=true; so it does,
# outside CI, with an engine it cannot start when make test calls it
# (TEST_CONTAINERS_OPTIONAL=1).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
label=org.dedupsim.live
docker=/usr/bin/docker
[[ -x $docker ]] || docker=$(command -v docker || true)

if [[ -z $docker ]]; then
  if [[ ${CI:-} == true ]]; then
    echo "FAIL: the container suite needs Docker (apt-get install docker.io; .ci/run does)" >&2
    exit 1
  fi
  echo "!!! SKIPPING the container suite: no docker client; install Docker (apt-get install docker.io), then run make test-containers"
  exit 0
fi

if ! $docker info >/dev/null 2>&1; then
  if [[ -n ${DOCKER_HOST:-} ]]; then
    echo "FAIL: DOCKER_HOST=$DOCKER_HOST does not answer" >&2
    exit 1
  fi
  if [[ $(id -u) != 0 ]] || ! command -v dockerd >/dev/null; then
    what="no Docker engine answers: start one (sudo dockerd, or systemctl start docker) or set DOCKER_HOST, then run make test-containers"
    if [[ -n ${TEST_CONTAINERS_OPTIONAL:-} && ${CI:-} != true ]]; then
      echo "!!! SKIPPING the container suite: $what"
      exit 0
    fi
    echo "FAIL: $what" >&2
    exit 1
  fi
  # --userland-proxy=false: published ports by iptables instead of
  # docker-proxy, which accepts a connection on the host port while the
  # container's broker is not listening yet (after a docker start) and
  # closes it at once; franz-go takes that first-read EOF as a TLS mistake
  # and does not retry it, so a produce during the broker-restart fault
  # failed. Without the proxy such a connection is refused, which the
  # clients retry.
  echo "test-containers: starting dockerd --userland-proxy=false (log /var/log/dockerd.log)"
  nohup dockerd --userland-proxy=false >/var/log/dockerd.log 2>&1 &
  for _ in $(seq 60); do
    $docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  $docker info >/dev/null 2>&1 || { echo "FAIL: dockerd did not come up; last lines of /var/log/dockerd.log:" >&2; tail -20 /var/log/dockerd.log >&2; exit 1; }
fi

cleanup() {
  local ids
  ids=$($docker ps -aq --filter "label=$label")
  [[ -n $ids ]] && $docker rm -f -v $ids >/dev/null
  ids=$($docker network ls -q --filter "label=$label")
  [[ -n $ids ]] && $docker network rm $ids >/dev/null
  ids=$($docker volume ls -q --filter "label=$label")
  [[ -n $ids ]] && $docker volume rm -f $ids >/dev/null
  return 0
}
report() {
  local left
  cleanup
  left=$( ($docker ps -aq --filter "label=$label"; $docker network ls -q --filter "label=$label"; $docker volume ls -q --filter "label=$label") | wc -l)
  echo "test-containers: $left labelled containers, networks and volumes left"
}
cleanup
trap report EXIT

version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' scripts/kafka/pom.xml)
export DEDUPSIM_KAFKA_IMAGE=${DEDUPSIM_KAFKA_IMAGE:-dedupsim/kafka:$version}
if [[ $DEDUPSIM_KAFKA_IMAGE == dedupsim/* ]]; then
  ./scripts/kafka-image.sh
fi
export TESTCONTAINERS_RYUK_DISABLED=true DEDUPSIM_KAFKA=testcontainers
# -p 1: one Kafka cluster at a time on the machine.
${GO:-go} test -p 1 -count=1 -v -timeout 20m ./live/ ./cmd/dedupsim/ -run "${TEST_CONTAINERS_RUN:-Container}"
