#!/usr/bin/env bash
# kafka-image.sh: build the local Kafka image that `--kafka testcontainers`
# runs when DEDUPSIM_KAFKA_IMAGE names it (make kafka-image), on a machine
# that reaches no image registry:
#
#   1. a Debian base with Java 17 ($BASE, default dedupsim-base:jre17):
#      debootstrap --variant=minbase from the machine's own Debian mirror
#      (read from its apt sources), then docker import; about 4 min, 480 MB;
#   2. the Kafka jars of scripts/kafka-fetch.sh (.cache/kafka/lib) and an
#      entry script with the apache/kafka image's interface (KAFKA_*
#      variables, CLUSTER_ID) on top: $IMAGE, default dedupsim/kafka:<version>.
#
# Idempotent: an image that exists is kept (the Kafka image when built from
# the same jars and scripts). KAFKA_IMAGE_FORCE=1 builds the Kafka image
# again. Needs root for debootstrap, and a running Docker engine.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
pom="$root/scripts/kafka/pom.xml"
ctx_src="$root/scripts/kafka-image"
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
image=${DEDUPSIM_KAFKA_IMAGE:-dedupsim/kafka:$version}
base=${DEDUPSIM_BASE_IMAGE:-dedupsim-base:jre17}
work="$root/.cache/kafka-image"
# The Debian docker.io client; a client elsewhere on PATH may lack flags.
docker=/usr/bin/docker
[[ -x $docker ]] || docker=docker

if ! $docker info >/dev/null 2>&1; then
  echo "kafka-image: no Docker engine answers (start dockerd as root, or set DOCKER_HOST)" >&2
  exit 1
fi

stamp="$version-$(cat "$pom" "$ctx_src"/* | cksum | cut -d' ' -f1)"
have=$($docker image inspect -f '{{index .Config.Labels "org.dedupsim.kafka-image"}}' "$image" 2>/dev/null || true)
if [[ -z ${KAFKA_IMAGE_FORCE:-} && $have == "$stamp" ]]; then
  echo "kafka-image: $image exists (Kafka $version)"
  exit 0
fi

"$root/scripts/kafka-fetch.sh"

if ! $docker image inspect "$base" >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || { echo "kafka-image: debootstrap not found (apt-get install debootstrap)" >&2; exit 1; }
  [[ $(id -u) == 0 ]] || { echo "kafka-image: debootstrap needs root" >&2; exit 1; }
  . /etc/os-release
  suite=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}
  # The mirror the machine's apt uses: the first URIs of a deb822 source
  # (or the first deb line of sources.list) serving the suite.
  mirror=$(awk -v s="$suite" '
    /^URIs:/ {u=$2} /^Suites:/ {for (i=2;i<=NF;i++) if ($i==s && u!="") {print u; exit}} /^$/ {u=""}
  ' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  if [[ -z $mirror ]]; then
    mirror=$(awk -v s="$suite" '$1=="deb" {for (i=2;i<=NF;i++) if ($i==s) {print $(i-1); exit}}' /etc/apt/sources.list 2>/dev/null || true)
  fi
  [[ -n $mirror ]] || { echo "kafka-image: no apt source for $suite found in /etc/apt" >&2; exit 1; }
  echo "kafka-image: debootstrap $suite (minbase + openjdk-17-jre-headless) from the machine's apt mirror"
  start=$(date +%s)
  rootfs="$work/rootfs"
  rm -rf "$rootfs"
  mkdir -p "$rootfs"
  debootstrap --variant=minbase --include=openjdk-17-jre-headless "$suite" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | $docker import -c 'ENV LANG=C.UTF-8' - "$base" >/dev/null
  rm -rf "$rootfs"
  echo "kafka-image: $base in $(( $(date +%s) - start )) s"
fi

echo "kafka-image: building $image"
start=$(date +%s)
ctx="$work/context"
rm -rf "$ctx"
mkdir -p "$ctx"
cp "$ctx_src"/* "$ctx/"
cp -r "$root/.cache/kafka/lib" "$ctx/lib"
rm -f "$ctx"/lib/.fetched-*
$docker build -q --build-arg BASE="$base" --build-arg STAMP="$stamp" -t "$image" "$ctx" >/dev/null
rm -rf "$ctx"
echo "kafka-image: $image ($($docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%d MB", $1/1e6}')) in $(( $(date +%s) - start )) s"
