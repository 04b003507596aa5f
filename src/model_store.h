/*
 * model_store.h -- the one module that writes a model's tables
 * (model_store.c)
 *
 * Train, refresh and personalize write a model through these functions
 * only, after they locked it (model_lock.c) and while they run as its
 * owner (run_as_owner.c); the caller is connected to SPI.
 */
#ifndef PERPCA_MODEL_STORE_H
#define PERPCA_MODEL_STORE_H

#include "postgres.h"

#include "executor/spi.h"
#include "utils/tuplestore.h"

#include "fit_types.h"
#include "model_read.h"
#include "model_schema.h"
#include "row_reader.h"
#include "stats.h"

/* A model being written: its schema and base name, and perpca's schema (quoted, for SQL). */
typedef struct StoreModel
{
	const char *schema;
	const char *base;
	const char *ext;
	double		calibration;	/* the share of rows held out to calibrate control limits (calibrate.c), 0: none */
} StoreModel;

/* One client read from the view: its key (text), statistics (NULL when NULL) and n_local (NULL: -1, n_local_null). */
typedef struct StagedClient
{
	char	   *key;
	PerpcaStats *stats;
	int32		n_local;
	bool		n_local_null;
} StagedClient;

/* The clients of a train or refresh, in the byte order of their keys, and the query's feature names. */
typedef struct Stage
{
	Oid			key_type;
	int			n;
	StagedClient *c;
	bool		any_n_local;
	Datum		names;			/* text[] */
	bool		names_null;
} Stage;

/* A fit stored: its figures (no pointers), and its history row without kind, at, seconds, role. */
typedef struct StoreFit
{
	FitDiagnostics diag;
	ModelRow	history;
} StoreFit;

/* The model schema.base, with perpca's schema looked up. */
extern void store_model_init(StoreModel *sm, const char *schema, const char *base);

/* "schema"."base_suffix", quoted. */
extern char *store_rel(const StoreModel *sm, const char *suffix);

/* Run sql through SPI with parameters $1..$n (of types; nulls as SPI's, NULL: none); its rows in SPI_tuptable. */
extern void store_sql(const char *sql, int n, const Oid *types, const Datum *values, const char *nulls);

/* Drop the current user's view <base>_suffix; another relation of that name: 42P07 when strict. */
extern void store_view_drop(const StoreModel *sm, const char *suffix, bool strict);

/* CREATE VIEW <base>_suffix AS select, bound under search_path path, with its comment. */
extern void store_view_create(const StoreModel *sm, const char *suffix, const char *select, const char *path,
							  const char *comment);

/* The view <base>_suffix must be a view of the current user (42P01 with hint when missing, 42809 otherwise). */
extern void store_view_check(const StoreModel *sm, const char *suffix, const char *hint);

/*
 * Bind a model's query once with perpca's aggregation of its rows per
 * client under missing, in the view <base>_source (anew), with search_path
 * path; the names of the query's feature columns into st.
 */
extern void store_source_bind(const StoreModel *sm, const char *query, const char *path, PerpcaMissing missing,
							  Stage *st);

/*
 * store_source_bind for a model stored before 0.4.0, bound at its first
 * refresh from its recorded query and search_path: only the schemas of path
 * in which no role but the owner (the current user) or a superuser can
 * create are searched; an error says which were left out.
 */
extern void store_source_bind_stored(const StoreModel *sm, const char *query, const char *path,
									 PerpcaMissing missing, Stage *st);

/*
 * Read the view <base>_source (a view of the current user) into st and the
 * stage pg_temp.perpca_train_src, each key written by client_key.c; a view
 * its owner rewrote to return rows is aggregated under missing.
 */
extern void store_stage_fill(const StoreModel *sm, PerpcaMissing missing, Stage *st);

/* Rows of the staged clients. */
extern int64 store_stage_rows(const Stage *st);

/*
 * Fit the staged clients with opts and store the model (new, or replacing
 * its rows) from query (its text) bound with path, into out.
 */
extern void store_fit(const StoreModel *sm, const char *query, const char *path, const FitOptions *opts,
					  const Stage *st, StoreFit *out);

/* The SHA-256 (hex) of the stage, the options (jsonb) that define the fit and the feature names. */
extern char *store_digest(const Stage *st, Datum options, Datum names, bool names_null);

/*
 * Append row (of the history; its version, when NULL, the model's) to the
 * model's history (creating it for a model stored before 0.3.0); row gets
 * its entry.
 */
extern void store_history_append(const StoreModel *sm, ModelRow *row);

/*
 * Store local components of one client of m (none for n_local 0; n_local
 * < 0: the model's), its row in <base>_clients and a new version; its
 * components (component, pc, variance) into out (when not NULL), their
 * number returned.
 */
extern uint64 store_personalize(const StoreModel *sm, const ModelData *m, const char *client,
								const PerpcaStats *stats, int n_local, Tuplestorestate *out);

/* Add to the model's table t the declared columns it lacks (model_schema.c). */
extern void store_columns_add(const StoreModel *sm, ModelTable t);

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
