#!/bin/bash
# A first walk on a real table with gaps, the gaps left in:
# Texas housing (ggplot2's txhousing, from the Debian package r-cran-ggplot2):
# 46 cities, monthly 2000-2015, 8,602 rows, 1,476 of them with a gap.
# Choose ranks, train from feature columns, evaluate the held-out year,
# personalize a held-out city, refresh with the new year, refresh again after
# a city lost every row.  Needs Rscript with ggplot2 and psql on a database
# with perpca (PG* variables), e.g. after `bash scripts/demo.sh --keep`.
set -euo pipefail
csv=$(mktemp --suffix=.csv)
trap 'rm -f "$csv"' EXIT
Rscript -e "library(ggplot2); write.csv(txhousing, '$csv', row.names = FALSE, na = '')"
chmod a+r "$csv"
sed "s|@CSV@|$csv|" "$(dirname "$0")/missing_walk.sql" | psql -X -f -
