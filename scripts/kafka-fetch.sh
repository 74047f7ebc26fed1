#!/usr/bin/env bash
# kafka-fetch.sh: fetch the runtime jars of Apache Kafka (kafka_2.13, pinned
# in scripts/kafka/pom.xml) plus a log4j2 backend from Maven Central into
# $KAFKA_DIR/lib (default .cache/kafka/lib, git-ignored), for the local
# broker of live.StartLocal (make test-kafka). Needs mvn and Java 17+.
#
# Idempotent: when lib/ already holds the jars fetched with this very pom it does
# nothing. Set KAFKA_FETCH_FORCE=1 to fetch again.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
pom="$root/scripts/kafka/pom.xml"
dir=${KAFKA_DIR:-$root/.cache/kafka}
lib="$dir/lib"

version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
stamp="$lib/.fetched-$version-$(cksum <"$pom" | cut -d" " -f1)"

if [[ -z "${KAFKA_FETCH_FORCE:-}" && -f "$stamp" ]] && compgen -G "$lib/kafka_2.13-$version.jar" >/dev/null; then
  echo "kafka-fetch: $lib already holds Kafka $version ($(ls "$lib"/*.jar | wc -l) jars)"
  exit 0
fi

for tool in mvn java; do
  command -v "$tool" >/dev/null || { echo "kafka-fetch: $tool not found on PATH" >&2; exit 1; }
done

echo "kafka-fetch: copying Kafka $version runtime jars into $lib"
start=$(date +%s)
tmp="$dir/lib.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
mvn -B -q -Dstyle.color=never -f "$pom" dependency:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$tmp"
[[ -f "$tmp/kafka_2.13-$version.jar" ]] || { echo "kafka-fetch: kafka_2.13-$version.jar missing after mvn" >&2; exit 1; }
touch "$tmp/$(basename "$stamp")"
rm -rf "$lib"
mv "$tmp" "$lib"
echo "kafka-fetch: $(ls "$lib"/*.jar | wc -l) jars, $(du -sh "$lib" | cut -f1), in $(( $(date +%s) - start )) s"
