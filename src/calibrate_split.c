/*
 * calibrate_split.c -- the split of a model's rows into fitted and held-out
 * ones, as SQL bound in its views at train (calibrate_split.h)
 *
 * A row (client, x) is held out when abs(hash_record_extended(ROW(client,
 * x), 0) % 10000) < round(share * 10000): the same rows at every read, in
 * any session, under any setting (the hash of float8 does not depend on
 * extra_float_digits).  A client key type without an extended hash
 * function is hashed as the text of its output function (record_out), as
 * perpca_choose_ranks splits its rows (ranks.c): nothing another role
 * creates is resolved by name.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/typcache.h"

#include "calibrate_split.h"
#include "error_kinds.h"
#include "perpca.h"

/* ------------------------------------------------------------------------
 * The option
 * ------------------------------------------------------------------------
 */

double
calibrate_share(double share)
{
	if (share != 0.0 && !(share > 0.0 && share < 1.0))
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_OPTION),
				 errmsg("option \"calibration\" must be a share between 0 and 1 (exclusive), got %g", share),
				 errhint("calibration => 0.2 holds out a fifth of the training rows to calibrate perpca_model_monitor's limits; NULL or 0 holds out none.")));
	/* the split's resolution: at least one bucket held out, at least one kept */
	if (share > 0.0 && lround(share * CALIBRATE_BUCKETS) < 1)
		share = 1.0 / CALIBRATE_BUCKETS;
	if (lround(share * CALIBRATE_BUCKETS) >= CALIBRATE_BUCKETS)
		share = (CALIBRATE_BUCKETS - 1.0) / CALIBRATE_BUCKETS;
	return share;
}

/* ------------------------------------------------------------------------
 * The split, bound in the views
 * ------------------------------------------------------------------------
 */

/* The shape of query planned with search_path path; a query of statistics is refused. */
static void
calibrate_shape(const char *query, const char *path, PerpcaMissing mode, RowSource *shape)
{
	row_source_open_path(shape, query, "query of a model", mode, path);
	if (shape->form == ROW_FORM_STATS)
		ereport(ERROR,
				(errcode(PERPCA_ERRCODE_UNSUPPORTED),
				 errmsg("calibration needs the training rows, not statistics"),
				 errdetail("The query returns (client, perpca_stats): its rows cannot be split into fitted and held-out ones."),
				 errhint("Pass the query of the rows, (client, x) or (client, c1, c2, ...), or leave calibration NULL.")));
}

char *
split_key_sql(Oid type, const char *expr, bool *as_text)
{
	*as_text = !OidIsValid(lookup_type_cache(type, TYPECACHE_HASH_EXTENDED_PROC)->hash_extended_proc);
	return *as_text ? psprintf("pg_catalog.textin(pg_catalog.record_out(ROW(%s)))", expr) : pstrdup(expr);
}

/* Whether row r (columns c and x float8[] of the rows' query) is held out, as SQL. */
static char *
heldout_sql(const RowSource *shape, double share)
{
	bool		as_text;

	return psprintf("pg_catalog.abs(pg_catalog.hash_record_extended(ROW(%s, r.x), 0) OPERATOR(pg_catalog.%%) %d)"
					" OPERATOR(pg_catalog.<) %ld", split_key_sql(shape->types[0], "r.c", &as_text),
					CALIBRATE_BUCKETS, lround(share * CALIBRATE_BUCKETS));
}

char *
calibrate_source_select(const char *query, const char *path, PerpcaMissing mode, double share, char **names_json)
{
	RowSource	shape;
	RowSource	kept;
	Oid			types[2];

	calibrate_shape(query, path, mode, &shape);
	*names_json = row_source_names_json(&shape);
	/* the rows not held out, as rows (client, x float8[]) the aggregation reads */
	kept = shape;
	kept.form = ROW_FORM_ARRAY;
	kept.natts = 2;
	types[0] = shape.types[0];
	types[1] = FLOAT8ARRAYOID;
	kept.types = types;
	kept.names = shape.names;
	kept.body = psprintf("SELECT r.c, r.x FROM (%s\n) AS r WHERE NOT (%s)", row_source_rows_sql(&shape),
						 heldout_sql(&shape, share));
	kept.query = kept.body;
	return row_source_stats_sql(&kept, false);
}

char *
calibrate_rows_select(const char *query, const char *path, double share)
{
	RowSource	shape;

	calibrate_shape(query, path, PERPCA_MISSING_ERROR, &shape);
	return psprintf("SELECT r.c AS client, r.x, %s AS heldout FROM (%s\n) AS r", heldout_sql(&shape, share),
					row_source_rows_sql(&shape));
}

char *
calibrate_split_rule(double share)
{
	return psprintf("abs(hash_record_extended(ROW(client, x), 0) %% %d) < %ld", CALIBRATE_BUCKETS,
					lround(share * CALIBRATE_BUCKETS));
}

