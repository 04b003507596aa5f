/*
 * calibrate_split.h -- the split of a model's rows into fitted and held-out
 * ones, as SQL bound in its views at train (calibrate_split.c)
 */
#ifndef PERPCA_CALIBRATE_SPLIT_H
#define PERPCA_CALIBRATE_SPLIT_H

#include "postgres.h"

#include "fmgr.h"

#include "row_reader.h"

/* The hash's range: a share is cut at round(share * CALIBRATE_BUCKETS). */
#define CALIBRATE_BUCKETS 10000

/* perpca_train's calibration argument (NULL: 0), checked: 0, or a share in (0, 1) (22023 otherwise). */
extern double calibrate_share(double share);

/*
 * The SELECT a model's source view binds when share > 0: the query's rows
 * (planned with search_path path) without the held-out ones, aggregated
 * per client under mode; *names_json as row_source_select's.  A query of
 * statistics cannot be split (0A000).
 */
extern char *calibrate_source_select(const char *query, const char *path, PerpcaMissing mode, double share,
									 char **names_json);

/*
 * The rows of query (planned with search_path path) as (client, x
 * float8[], heldout boolean), the view <model>_calibration binds.
 */
extern char *calibrate_rows_select(const char *query, const char *path, double share);

/*
 * A row key expr (of type) as SQL to hash that resolves no cast or function
 * of the type by name (its owner could plant a cast to text): expr itself
 * when the type has an extended hash function (from its default hash
 * operator class, which only a superuser creates), else the text of its
 * output function through record_out (*as_text).
 */
extern char *split_key_sql(Oid type, const char *expr, bool *as_text);

/* The split's rule in words, as <model>_info.calibration_split records it. */
extern char *calibrate_split_rule(double share);

#endif							/* PERPCA_CALIBRATE_SPLIT_H */
