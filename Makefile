# perpca -- PGXS build.  `make`, `make install`, `make installcheck`.
PG_CONFIG ?= pg_config
# perpca_vector: the companion extension for pgvector's types (requires perpca
# and vector); its functions live in perpca's module, so nothing here needs
# pgvector to build.
EXTENSION   = perpca perpca_vector
PERPCA_VERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" perpca.control)
MODULE_big  = perpca
OBJS        = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
# The install and upgrade scripts are assembled from one definition of each
# object (sql/README): sql/create_once/*.sql, sql/create_or_replace/*.sql and
# a short hand-written prologue per upgrade in sql/upgrade/.  Released scripts
# are kept as they shipped, in sql/released/.
DATA        = $(wildcard sql/released/*.sql) $(wildcard sql/perpca_vector--*.sql)
DATA_built  = sql/perpca--$(PERPCA_VERSION).sql sql/perpca--0.4.0--$(PERPCA_VERSION).sql

# pg_regress reads test/sql/NAME.sql and compares with expected/NAME.out
# (PostgreSQL 15's pg_regress looks in test/expected, a symlink to ../expected).
REGRESS      = $(patsubst test/sql/%.sql,%,$(sort $(wildcard test/sql/*.sql)))
REGRESS_OPTS = --inputdir=test --load-extension=perpca
TAP_TESTS    = 1
PROVE_TESTS  = test/t/*.pl

# PostgreSQL's own headers are treated as system headers so that -Wextra
# reports only our code.  CI adds PERPCA_CFLAGS=-Werror.
PG_CPPFLAGS = -Isrc -isystem $(shell $(PG_CONFIG) --includedir-server) -isystem $(libpq_srcdir)
# The "cheap" vectorizer cost model lets GCC vectorize loops of unknown length.
PG_CFLAGS   = -Wall -Wextra -fvect-cost-model=cheap $(PERPCA_CFLAGS)
SHLIB_LINK  = -llapacke -lopenblas -lm
# perpca_fit_federated talks to the shards with libpq (as dblink and postgres_fdw do).
SHLIB_LINK_INTERNAL = $(libpq)

EXTRA_CLEAN = $(DATA_built) sql/upgrade/guard.sql results regression.diffs regression.out log tmp_check bench/*.tmp

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The TAP tests share test/t/PerpcaTest.pm (set after PGXS, which resets PROVE_FLAGS).
PROVE_FLAGS += -I test/t

# PGXS does not track header dependencies: rebuild everything when a header changes.
$(OBJS): $(wildcard src/*.h)

# Parts are concatenated in the order of their file names.  An upgrade runs
# the prologue, the create-once parts new in this version, then every
# create-or-replace part: the same text a fresh install runs.
ONCE_PARTS     = $(sort $(wildcard sql/create_once/*.sql))
REPLACE_PARTS  = $(sort $(wildcard sql/create_or_replace/*.sql))
NEW_ONCE_0_5_0 =
# The fit options' arguments are written from the option list of
# src/fit_types.h (sql/options.awk: its marks, and what an upgrade drops).
OPTIONS_AWK = awk -f sql/options.awk src/fit_types.h pass=collect $(REPLACE_PARTS) \
	pass=released sql/released/perpca--0.4.0.sql pass=emit
OPTIONS_IN  = sql/options.awk src/fit_types.h sql/released/perpca--0.4.0.sql
sql/perpca--$(PERPCA_VERSION).sql: $(ONCE_PARTS) $(REPLACE_PARTS) $(OPTIONS_IN)
	$(OPTIONS_AWK) $(ONCE_PARTS) $(REPLACE_PARTS) > $@.tmp && mv $@.tmp $@
sql/perpca--0.4.0--$(PERPCA_VERSION).sql: sql/upgrade/perpca--0.4.0--$(PERPCA_VERSION).sql sql/upgrade/guard.sql $(NEW_ONCE_0_5_0) $(REPLACE_PARTS) $(OPTIONS_IN)
	$(OPTIONS_AWK) $(filter-out $(OPTIONS_IN),$^) > $@.tmp && mv $@.tmp $@

# The upgrade's guard (sql/upgrade/guard.sql.in): the schema and name of every
# function, aggregate and procedure the install parts create, as VALUES rows.
sql/upgrade/guard.sql: sql/upgrade/guard.sql.in $(ONCE_PARTS) $(REPLACE_PARTS)
	grep -ohE 'CREATE (OR REPLACE )?(FUNCTION|AGGREGATE|PROCEDURE) [A-Za-z_.]+' $(ONCE_PARTS) $(REPLACE_PARTS) \
	  | awk '{ n = $$NF; s = "@extschema@"; if (index(n, ".")) { s = substr(n, 1, index(n, ".") - 1); n = substr(n, index(n, ".") + 1) } print s " " n }' \
	  | sort -u | awk '{ printf "%s               (\x27%s\x27, \x27%s\x27)", (NR > 1 ? ",\n" : ""), $$1, $$2 } END { print "" }' > $@.names
	sed -e '/@NAMES@/{r $@.names' -e 'd}' $< > $@
	rm -f $@.names

# Release tarball: the committed tree at HEAD as perpca-<version>.tar.gz (what
# PGXN takes); the current scripts are built from sql/ by `make`.
# The version comes from perpca.control and must match META.json.
.PHONY: dist
dist:
	@grep -q '"version": "$(PERPCA_VERSION)"' META.json || { echo "META.json does not say version $(PERPCA_VERSION)"; exit 1; }
	git archive --format=tar.gz --prefix=perpca-$(PERPCA_VERSION)/ -o perpca-$(PERPCA_VERSION).tar.gz HEAD
	@echo "perpca-$(PERPCA_VERSION).tar.gz"
