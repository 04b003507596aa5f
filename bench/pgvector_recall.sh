#!/usr/bin/env bash
# bench/pgvector_recall.sh -- per-tenant reduction for pgvector indexes on real data:
# recall@10 of Personalized PCA's scores against pooled PCA's at the same width r,
# on the LSA vectors (d = 1536) of Debian's package descriptions, one tenant per
# Debian section.
#
#   PGHOST=... PGPORT=... PGDATABASE=... nice -n 10 bash bench/pgvector_recall.sh [CORPUS_DIR]
#   WIDTHS="16 32 64" QUERIES=50 RESULTS=file.json FIT_OPTIONS=", init => 'dispca', hops => 0, tolerance => 1e-6"
#
# CORPUS_DIR (default /tmp/perpca-lsa) holds bench/debian_lsa.py's output; it
# is made when missing (apt lists with Translation-en needed: as root, run
# apt-get update -o Acquire::Languages=en first; 3-5 min).  The documents go
# into lsa_docs (vector(1536)), their exact statistics into lsa_stats, then
# bench/pgvector_recall.py fits, scores, indexes and measures (see there).
# Needs a server with perpca and pgvector (perpca_vector is created), python3-numpy,
# python3-scipy and python3-psycopg.  About 20 minutes on two busy cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
corpus=${1:-/tmp/perpca-lsa}
. "$here/lsa_load.sh"
lsa_load "$corpus"
OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$here/pgvector_recall.py" "$corpus"
