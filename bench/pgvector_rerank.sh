#!/usr/bin/env bash
# bench/pgvector_rerank.sh -- reduce, index, re-rank on real data: an HNSW index over
# r = 256 Personalized PCA scores of d = 1536 vectors gives candidates, which the
# full vectors re-rank in the same SQL query; recall@10, index sizes and median ms
# per query against an HNSW index over the full vectors, on the LSA vectors of
# Debian's package descriptions (one tenant per Debian section).
#
#   PGHOST=... PGPORT=... PGDATABASE=... nice -n 10 bash bench/pgvector_rerank.sh [CORPUS_DIR]
#   R=256 SPLITS="64 128 192" CANDIDATES="20 40 80 160 320 640" QUERIES=50 POOLED=1 RESULTS=file.json
#   FIT_OPTIONS=", init => 'dispca', hops => 0, tolerance => 1e-4"   (docs/pgvector.md's recipe)
#   (SPLITS="" POOLED=1: pooled PCA, a global reduction, is the one indexed)
#
# CORPUS_DIR (default /tmp/perpca-lsa) as for bench/pgvector_recall.sh (made when
# missing; as root, run apt-get update -o Acquire::Languages=en first).
# bench/pgvector_rerank.py fits, scores, indexes and measures (see there).
# Needs a server with perpca and pgvector (perpca_vector is created), python3-numpy,
# python3-scipy and python3-psycopg; about 1 GB of maintenance_work_mem for the
# full-vector index.  About 30-40 minutes on two busy cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
corpus=${1:-/tmp/perpca-lsa}
. "$here/lsa_load.sh"
lsa_load "$corpus"
OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$here/pgvector_rerank.py" "$corpus"
