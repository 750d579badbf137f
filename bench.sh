#!/bin/sh
# Every benchmark, with the figures docs/performance.md shows: the host over its pipes against a minimal host
# doing the same LMDB work, and its growth curves (plots written to docs/bench/); then the cache as an
# extension sees it in headless Chromium, against Chrome's transport alone, IndexedDB and
# chrome.storage.local. Not part of the test command: it measures, it asserts nothing about speed.
# BENCH_RUNS (default 20) sets the runs per figure of both.
set -eu
cd "$(dirname "$0")"
LLM_CACHE_BENCH_RUNS="${BENCH_RUNS:-20}" LLM_CACHE_BENCH_PLOTS="$PWD/docs/bench" cargo bench --bench host
(cd extension-shim && npm ci --silent && npm run build)   # the demo extension loads the built shim
cd e2e
npm ci --silent
npm run bench
