/*
 * perpca.h -- declarations shared by the perpca source files
 *
 * Files and what they own:
 *   init.c              module initialisation (_PG_init: BLAS threading, the readers of vector rows, settings)
 *   progress.c          progress of long work: perpca.progress_rows, phases in pg_stat_activity
 *   arrays.c            validating and building float8[] values (vectors, matrices)
 *   stats.c             the perpca_stats type: I/O, send/receive, moments (stats.h)
 *   stats_agg.c         the perpca_stats and perpca_sketch aggregates (float8[]; vector
 *                       and halfvec through a table of row readers): transition,
 *                       combine, serialize, final
 *   sketch.c            Frequent Directions over a group's centred rows: add, shrink
 *                       (dsyevd of the buffer's Gram), merge sketches and stored values,
 *                       the sketch value, serialized state (sketch.h)
 *   stats_dist_agg.c    perpca_stats_distributed / perpca_merge_distributed: stats_agg.c's
 *                       state behind a perpca_stats-typed (expanded) state, which Citus
 *                       splits across its workers
 *   linalg.c            the only file that calls CBLAS / LAPACKE (linalg.h)
 *   The fit, one engine in layers (fit.h draws them; data flow one way; the
 *   types they share are in fit_types.h, below them all):
 *   eigen.c             eigensolvers over double arrays: the exact solves (LAPACK),
 *                       subspace iteration, LOBPCG on an operator given by its
 *                       products; orthonormal blocks, seeded start blocks (eigen.h)
 *   client_math.c       what one client computes from S_i, in terms of eigen.c:
 *                       products, eigenpairs, the paper's client step, the best
 *                       response (client_math.h)
 *   node.c              the clients on this server as weighted sums; the local
 *                       backend (node.h)
 *   solver_*.c          one solver each, the hooks of its row in fit.c's table:
 *                       solver_lbfgs.c Riemannian L-BFGS over U (best-response V_i),
 *                       the default; solver_paper.c the paper's Algorithm 2
 *   fit_start.c         starting U: disPCA, Qu, pooled, random, given; hop starts
 *   fit_search.c        the search of one fit: the start list, starts and hops x
 *                       solver, the basins found, when it stops (fit_search.h)
 *   fit.c               one fit: the search's U made feasible, ordered, diagnostics
 *   fit_baselines.c     the one-shot methods dispca, cpca, indiv (fit_baselines.h)
 *   fit_options.c       the options of a fit: one table of names, kinds and defaults,
 *                       read by argument name or from one jsonb value
 *   scale.c             feature scaling (scale => 'standard'): pooled standard
 *                       deviations from statistics, scaled statistics (scale.h)
 *   fit_sums.c          the nodes' weighted sums, the per-round trace, theta_est
 *   exact_sum.c         order-independent sums: a long accumulator per entry, read
 *                       correctly rounded or as an exact expansion a shard ships
 *                       (exact_sum.h), so a federated fit has one node's bits
 *   row_reader.c        the one reader of a user's query of rows or statistics: one
 *                       SELECT checked, planned once into a row source, its
 *                       input forms, the missing option ('error', 'skip', 'observed'),
 *                       the NOTICEs for skipped rows and empty groups (row_reader.h)
 *   client_key.c        a client's key as a model stores and compares it: the key
 *                       type's output, written the same under any setting (client_key.h)
 *   fit_input.c         the input: the clients read from a row source, their checks,
 *                       the clients' S_i, result rows (fit_input.h)
 *   fit_span.c          a fit of thin and sketched clients in the span of their rows:
 *                       the basis from the rows' Gram matrix, the clients' coordinates,
 *                       the components lifted back to d; perpca.fit_span (fit_span.h)
 *   fit_sql.c           perpca_fit(), perpca_last_fit*(): the SQL entry of a local fit
 *   federated.c         perpca_fit_federated(): the fit with a backend on shards
 *   shard_conn.c        libpq connections from the coordinator to the shards
 *   federated_shard.c   perpca_internal.shard_*(): node.c behind SQL on each shard
 *   model_lock.c        the rule for model names; finding and locking a model's tables
 *                       in one order; perpca_drop (model_lock.h)
 *   model_read.c        finding a stored model, checking its tables (plain, one owner,
 *                       readable by the caller) and reading them without SQL; the
 *                       per-backend model cache (model_read.h); perpca_model_history()
 *   citus_placement.c   on Citus: a model table that is a reference table, read through
 *                       this node's local shard (citus_placement.h)
 *   model_bind.c        a calling expression bound to a stored model's cached data,
 *                       client keys of any type, the distance between two clients'
 *                       local subspaces (model_bind.h)
 *   model_functions.c   the read side: SQL functions on a stored model (row-wise
 *                       projection with client keys of any type, similarity,
 *                       component info, theta); 45_model_functions.sql declares them
 *   results.c           perpca_component_info, perpca_loadings, perpca_component_variance,
 *                       perpca_clusters: a stored model read as a user reads it
 *   monitor.c           perpca_model_monitor: control limits of a stored model, and
 *                       the per-client statistics they need, stored at training time;
 *                       calibrated limits from the scores calibrate.c stores (monitor.h)
 *   calibrate.c         calibrated control limits: the model's held-out rows scored after
 *                       every fit, their top scores and the flagged shares stored
 *                       (calibrate.h)
 *   calibrate_split.c   the split of a model's rows into fitted and held-out ones, as SQL
 *                       bound in its views at train (calibrate_split.h)
 *   quantiles.c         upper quantiles of the F and normal distributions (monitor.c's
 *                       control limits; quantiles.h)
 *   model_schema.c      the columns of a model's tables, declared once: the CREATE TABLE,
 *                       the ADD COLUMNs of older models and the readers' expected
 *                       columns are generated from it (model_schema.h)
 *   model_store.c       the one module that writes a model's tables: the bound view, the
 *                       stage, the fit's rows, the clients' figures, a personalized
 *                       client, the history (model_store.h)
 *   model_write.c       the write side's entry points: perpca_train(), perpca_refresh()
 *                       in C from the call to the last row (name, options, the recorded
 *                       search_path, the caller's stage, the owner's fit and store)
 *   personalize.c       perpca_personalize(): local components for one client of a
 *                       stored model, stored in the model through model_store.c
 *   run_as_owner.c      a model's query and writes run as its owner, restricted
 *                       (run_as_owner.h)
 *   missing.c           rows with missing coordinates on a model: missing => 'observed'
 *                       (posterior mean under probabilistic PCA), perpca_model_impute's
 *                       arithmetic, the count of rows too sparse to score (missing.h)
 *   missing_eval.c      perpca_evaluate_imputation(): entries hidden at random, filled, scored
 *   project.c           projection functions on float8[] arrays
 *   pgvector_io.c       perpca_vector: pgvector's vector and halfvec read and written in
 *                       place, for perpca_stats(vector) (readers put in stats_agg.c's
 *                       table at load, so stats_agg.c never calls it) and the model
 *                       row functions
 *   evaluate.c          held-out evaluation of a stored model from statistics
 *                       (perpca_evaluate's per-client arithmetic), query column types
 *   ranks.c             perpca_choose_ranks(): every pair of a grid fitted on training
 *                       rows and evaluated on held-out rows, in memory (ranks_rule.h)
 *   ranks_rule.c        the pair it recommends and every pair's note (ranks_rule.h)
 *
 * test/t/091_file_map.pl checks that this map names every .c file in src/, and
 * only those (a name with * names a family of files).
 */
#ifndef PERPCA_H
#define PERPCA_H

#include "postgres.h"
#include "fmgr.h"
#include "utils/array.h"

#include "pg_compat.h"

/*
 * Largest supported dimension d: pgvector's storage limit.  Fits whose
 * clients are not dense (thin or sketched statistics) and the functions of
 * a stored model work in d x k and rows x d blocks, never d x d.
 */
#define PERPCA_MAX_DIM 16000

/*
 * Largest dimension of exact statistics (dense or thin perpca_stats values)
 * and of any path that forms a d x d matrix: a d x d float8 matrix stays
 * well under 1 GB.
 */
#define PERPCA_MAX_DENSE_DIM 4096

/* ---- progress.c ---- */

/* Define perpca.progress_rows and restore the statement at transaction end (_PG_init). */
extern void perpca_progress_init(void);

/* Show a long call's phase in pg_stat_activity.query (printf-style). */
extern void perpca_report_phase(const char *fmt,...) pg_attribute_printf(1, 2);

/* Show the statement again in pg_stat_activity.query (also done at transaction end). */
extern void perpca_restore_activity(void);

/* GUC perpca.progress_rows (0 = off). */
extern int	perpca_progress_rows;

/* ---- row_reader.c ---- */

/*
 * Check that a caller's query text is exactly one SELECT (0A000 naming it
 * what otherwise); return the statement's own text, without trailing
 * semicolons.
 */
extern char *perpca_one_select(const char *query, const char *what);

/* ---- arrays.c ---- */

/* The schema of the perpca extension (pg_extension.extnamespace), or InvalidOid (stats.c). */
extern Oid	perpca_extension_schema(void);

/* OID of the perpca_stats type: in the schema of the perpca extension (stats.c). */
extern Oid	stats_type_oid(void);

/* Validate a 1-D float8[] without NULLs or non-finite values; return its data. */
extern double *perpca_vector_arg(ArrayType *a, int *dim, const char *what);

/* The same checks except finiteness (for callers that check it while copying). */
extern double *perpca_vector_shape(ArrayType *a, int *dim, const char *what);

/*
 * The shape checks only (1-D float8[] of at most PERPCA_MAX_DIM elements):
 * the array may hold NULLs, and then its data are not d doubles in a row
 * (perpca_first_null tells where the first NULL is, or -1).
 */
extern double *perpca_vector_shape_nulls(ArrayType *a, int *dim, const char *what);
extern int	perpca_first_null(ArrayType *a);

/* Validate a 2-D float8[] (rows x cols) without NULLs; return its data (row-major). */
extern double *perpca_matrix_arg(ArrayType *a, int *rows, int *cols, const char *what);

/*
 * Components argument argno of a C function: a k x d float8[] (NULL or empty:
 * k = 0 and NULL), checked like perpca_matrix_arg and against dimension d.
 */
extern double *perpca_components_arg(FunctionCallInfo fcinfo, int argno, int d, int *k,
									 const char *what);

/* Raise the standard error for two different dimensions. */
extern pg_noreturn void perpca_dim_mismatch(int expected, int got, const char *what);

/* Raise program_limit_exceeded when d is above PERPCA_MAX_DIM. */
extern void perpca_check_dim_limit(int d);

/*
 * The same for PERPCA_MAX_DENSE_DIM: exact statistics, and paths that form
 * a d x d matrix (what names the path in the error's detail, or NULL).
 */
extern void perpca_check_dense_dim_limit(int d, const char *what);

/* Build float8[] values from C arrays. */
extern ArrayType *perpca_vector_build(const double *x, int n);

/* An integer column's value (smallint, integer, bigint, domains over them); else 42804 naming it what. */
extern int64 perpca_integer_value(Datum v, Oid type, const char *what);
extern ArrayType *perpca_matrix_build(const double *x, int rows, int cols);

/* ---- model_functions.c ---- */

/* What a row function on a stored model computes (perpca_model_scores, ...). */
typedef enum PerpcaRowOp
{
	PERPCA_ROW_SCORES,
	PERPCA_ROW_GLOBAL_PART,
	PERPCA_ROW_LOCAL_PART,
	PERPCA_ROW_RECONSTRUCT,
	PERPCA_ROW_RESIDUAL,
	PERPCA_ROW_ERROR
} PerpcaRowOp;

/*
 * A row function of a call (model, client, x[, unknown]) on the row x given as
 * d doubles: its *n result values (memory of the call site, valid until its
 * next call).
 */
extern const double *perpca_model_row(FunctionCallInfo fcinfo, PerpcaRowOp op,
									  const double *x, int d, int *n);

#endif							/* PERPCA_H */
