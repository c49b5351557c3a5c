#!/usr/bin/env bash
# The GraphQL benchmark on the 16-core device machine in one call, most wanted first, within a
# deadline (issue 25): the device tool lends 15 minutes a session, machine start included, and at
# most 10 a call. Packed first with `bash bench/device-bundle.sh`; then, from the project root
# here, the device tool's run with carry [".device"] and the command
#   bash bench/device-run.sh 570        (timeout_s 600)
# Each stage's log goes to $OUT as it is written, so a stage cut off by the deadline still comes
# back with the runs it finished; commit them under bench/results/ (named by date, benchmark and
# machine) beside the figures they give in docs/benchmarks.md. The stages:
#   1. part 1: by_pk and the four mutations, Svc, PostGraphile and the hand-written handler, two
#      rounds (the servers' order rotated), 4 s after a 1 s warm-up: req/s, and each server's CPU
#      per request, its main thread's apart (the rest is V8's and libuv's threads);
#   2. parts 2 and 3: the other queries, every server, one round, the same timing;
#   3. part 1 with 64 connections instead of 20: a server whose req/s rises with them was bound by
#      its requests' latency (its event loop runs dry and sleeps between answers: the switches per
#      request in each run's line), not by its CPU;
#   4. part 1 at one load (--rate 3000): the engine and the handler, by_pk and the mutations;
#   5. the engine's threads and collections (bench/graphql/gc.ts) on by_pk, update_by_pk,
#      delete_by_pk and nested, unpinned: whether a mutation charges V8's collector threads more.
# Usage: bash bench/device-run.sh [SECONDS] (the deadline for all stages; default 570).
set -uo pipefail
deadline=$(( $(date +%s) + ${1:-570} ))
out=${OUT:-/tmp/device-out}
mkdir -p "$out"
# Unpacked once per bundle: a machine still warm from an earlier call (or a dry run here) that
# unpacked another bundle unpacks this one afresh.
stamp=$(cksum < .device/bundle.tar.xz)
if [ ! -x /opt/b/node ] || [ "$(cat /opt/b/.stamp 2>/dev/null)" != "$stamp" ]; then
  rm -rf /opt/b && mkdir -p /opt/b/bin
  ( cd .device && python3 -c "import lzma,shutil,tarfile; shutil.copyfileobj(lzma.open('node22.xz'),open('/opt/b/node','wb')); tarfile.open('bundle.tar.xz').extractall('/opt/b')" ) || exit 1
  chmod +x /opt/b/node && ln -sf /opt/b/node /opt/b/bin/node
  printf '#!/bin/sh\nexit 0\n' > /opt/b/bin/npm && chmod +x /opt/b/bin/npm
  echo "$stamp" > /opt/b/.stamp
fi
export PATH=/opt/b/bin:$PATH
{ date -u; nproc; lscpu | grep -E 'Model name|^CPU\(s\)|MHz' ; free -g | head -2; node --version; } > "$out/machine.txt" 2>&1
cd /opt/b/app || exit 1

# stage NAME SECONDS-IT-NEEDS COMMAND...: runs when that much time is left, cut at the deadline.
stage() {
  local name=$1 needs=$2; shift 2
  local left=$(( deadline - $(date +%s) ))
  if [ "$left" -lt "$needs" ]; then echo "$name: skipped, $left s left of the $needs it needs" | tee -a "$out/stages.txt"; return; fi
  echo "$name: $(date -u +%H:%M:%S) start, $left s left" >> "$out/stages.txt"
  timeout "$left" "$@" > "$out/$name.log" 2>&1
  echo "$name: $(date -u +%H:%M:%S) exit $?" >> "$out/stages.txt"
}
run="node --import tsx bench/graphql/run.ts"
mutations=by_pk,insert_one,insert_nested,update_by_pk,delete_by_pk
stage part1 200 $run --only "$mutations" --servers svc,postgraphile,handwritten --rounds 2 --duration 4 --warmup 1
stage queries 240 $run --only simple,nested,deep,aggregate,groups,user,order_rel,large,multi,array_agg --duration 4 --warmup 1
stage part1-c64 100 $run --only by_pk,update_by_pk,delete_by_pk --servers svc,postgraphile,handwritten --connections 64 --duration 4 --warmup 1
stage part1-rate3000 100 $run --only by_pk,insert_one,update_by_pk,delete_by_pk --servers svc,handwritten --rate 3000 --duration 4 --warmup 1
stage gc 75 node --import tsx bench/graphql/gc.ts --only by_pk,update_by_pk,delete_by_pk,nested --rate 2000 --rounds 1 --duration 5 --warmup 1
cat "$out/stages.txt"
