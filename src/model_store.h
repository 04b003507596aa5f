/*
 * model_store.h -- the one module that writes a model's tables
 * (model_store.c)
 *
 * Train, refresh and personalize write a model through these functions
 * only, after they locked it (model_lock.c, the one lock order) and while
 * they run as the model's owner (run_as_owner.c: a security-restricted
 * operation with search_path = pg_catalog, pg_temp).  Each runs its SQL
 * through SPI (the caller is connected); the tables are made from the one
 * declaration of their columns (model_schema.c).
 */
#ifndef PERPCA_MODEL_STORE_H
#define PERPCA_MODEL_STORE_H

#include "postgres.h"

#include "utils/tuplestore.h"

/* A model being written: its schema and base name, and perpca's schema (quoted, for SQL). */
typedef struct StoreModel
{
	const char *schema;
	const char *base;
	const char *ext;
	double		calibration;	/* the share of rows held out to calibrate control limits (calibrate.c), 0: none */
} StoreModel;

/* The model schema.base, with perpca's schema looked up. */
extern void store_model_init(StoreModel *sm, const char *schema, const char *base);

/* "schema"."base_suffix", quoted. */
extern char *store_rel(const StoreModel *sm, const char *suffix);

/*
 * Run sql through SPI with parameters $1..$n (nulls as SPI takes them, NULL
 * for none); the first column of its first row (*isnull when there is none,
 * or it is NULL), valid until SPI_finish.
 */
extern Datum store_sql(const char *sql, int n, const Oid *types, const Datum *values, const char *nulls,
					   bool *isnull);

/* store_sql for a statement whose result is not wanted. */
extern void store_run(const char *sql, int n, const Oid *types, const Datum *values, const char *nulls);

/* A text or jsonb datum of a C string (SPI parameters). */
#define STORE_TEXT(s) CStringGetTextDatum(s)

/*
 * Bind a model's query once, with perpca's aggregation of its rows per
 * client under missing (the view <base>_source, created anew), as the
 * current user, with search_path path for the CREATE VIEW alone; the names
 * of the query's feature columns as a jsonb array, or NULL for other forms.
 */
extern Datum store_source_bind(const StoreModel *sm, const char *query, const char *path, const char *missing,
							   bool *names_null);

/*
 * store_source_bind for a model stored before 0.4.0, bound at its first
 * refresh from its recorded query and search_path: only the schemas of path
 * in which no role but the owner (the current user) or a superuser can
 * create are searched; an error says which were left out.
 */
extern Datum store_source_bind_stored(const StoreModel *sm, const char *query, const char *path,
									  const char *missing, bool *names_null);

/*
 * Read the view <base>_source (a view of the current user) into the stage
 * pg_temp.perpca_train_src, each key written by client_key.c; a view its
 * owner rewrote to return rows is aggregated under missing.  The names of
 * its feature columns as a jsonb array, or NULL for other forms.
 */
extern Datum store_stage_fill(const StoreModel *sm, const char *missing, bool *names_null);

/*
 * Fit the staged clients with options (jsonb) and store the model (new, or
 * replacing its rows); the fit's figures, version, rows, starts and digest
 * (jsonb) for the history.
 */
extern Datum store_fit(const StoreModel *sm, const char *source_query, Datum options, const char *path,
					   Datum names, bool names_null);

/* The SHA-256 of the stage, the options that define the fit and the feature names (text datum). */
extern Datum store_digest(const StoreModel *sm, Datum options, Datum names, bool names_null);

/* Append row r (jsonb) to the model's history (creating it for a model stored before 0.3.0); the row with its entry. */
extern Datum store_history_append(const StoreModel *sm, Datum r);

/*
 * Store local components of one client (none for n_local 0; n_local < 0:
 * the model's), its row in <base>_clients and a new version; its
 * components into out (when not NULL), their number returned.
 */
extern uint64 store_personalize(const StoreModel *sm, const char *client, Oid stats_type, Datum stats,
								int n_local, Datum factors, bool factors_null, Tuplestorestate *out);

/* Add to the model's table of suffix the declared columns it lacks (model_schema.c). */
extern void store_columns_add(const StoreModel *sm, const char *suffix);

/*
 * The stage of a train or refresh, as the caller (a security-restricted
 * operation may not create temporary tables): pg_temp.perpca_train_src,
 * usable by reader (the model's owner); the warm-start query run once, as
 * the caller with search_path path, into pg_temp.perpca_train_start; both
 * dropped.
 */
extern void store_stage_create(const StoreModel *sm, Oid reader);
extern void store_stage_start(const char *query, Oid reader, const char *path);
extern void store_stage_drop(void);

#endif							/* PERPCA_MODEL_STORE_H */
