/*
 * fit_types.h -- the types that every layer of a fit shares: the options,
 * the weighted sums a node returns, the backend, the diagnostics and the
 * result.  Types only: the layers' functions are declared in their own
 * headers (see fit.h for the layers).
 */
#ifndef PERPCA_FIT_TYPES_H
#define PERPCA_FIT_TYPES_H

#include "postgres.h"

#include "client_math.h"

typedef enum FitMethod
{
	FIT_METHOD_PERPCA,			/* global + local components (a solver) */
	FIT_METHOD_DISPCA,			/* one-shot personalized distributed PCA */
	FIT_METHOD_CPCA,			/* PCA of the pooled matrix, r1 + r2 components */
	FIT_METHOD_INDIV			/* each client alone, r1 + r2_i components */
} FitMethod;

typedef enum FitInit
{
	FIT_INIT_BEST,				/* lbfgs: keep the best of several starts; paper: short probe */
	FIT_INIT_DISPCA,			/* U of the personalized disPCA (stacked local PCs) */
	FIT_INIT_QU,				/* the paper's one-round distributed PCA (Qu et al.) */
	FIT_INIT_POOLED,			/* top r1 of sum_i w_i S_i */
	FIT_INIT_RANDOM,			/* seeded Gaussian */
	FIT_INIT_GIVEN				/* U0 (and each client's V0) of a warm start */
} FitInit;

typedef enum FitCenter
{
	FIT_CENTER_CLIENT,			/* each client's own mean */
	FIT_CENTER_GLOBAL,			/* the pooled mean */
	FIT_CENTER_NONE				/* no centring (the paper's S_i) */
} FitCenter;

typedef enum FitScale
{
	FIT_SCALE_NONE,				/* features as they are */
	FIT_SCALE_STANDARD			/* each feature divided by its pooled standard deviation (scale.h) */
} FitScale;

/*
 * Every option of a fit: one row each, the one list that FitOptions'
 * fields and fit_options.c's option table (its checks, defaults, JSON)
 * are made from, and sql/options.awk the SQL functions' arguments (the
 * last column: which functions take it).  Columns: name (the field and the
 * SQL argument), C type, kind, default (a choice's index; NAN: set from
 * other options), its choices, min, max, recorded in a model's options,
 * SQL functions.  Rows are in checking order: the first invalid option is
 * the one reported.  A new option is a row here, its consumer, its test
 * and the README.
 */
#define FIT_OPTION_LIST(X) \
	X(n_global, int, OPT_RANK, 0, NO_CHOICES, 0, PERPCA_MAX_DIM, false, 0) \
	X(n_local, int, OPT_RANK, 0, NO_CHOICES, 0, PERPCA_MAX_DIM, false, 0) \
	X(method, FitMethod, OPT_CHOICE, FIT_METHOD_PERPCA, CHOICES(fit_method_names), 0, 0, true, SQL_FIT | SQL_TRAIN) \
	X(solver, int, OPT_SOLVER, 0, NO_CHOICES, 0, 0, true, SQL_ALL) /* a row of fit_solvers (fit.c) */ \
	X(rounds, int, OPT_INT, 5000, NO_CHOICES, 0, 10000000, true, SQL_ALL) /* most rounds in all */ \
	X(tolerance, double, OPT_FLOAT, NAN, NO_CHOICES, 0, 0, true, SQL_ALL) \
	X(step, double, OPT_FLOAT, 0.0, NO_CHOICES, 1, 0, true, SQL_ALL) /* paper: <= 0: from the spectrum */ \
	X(adaptive, bool, OPT_BOOL, NAN, NO_CHOICES, 0, 0, true, SQL_ALL) /* paper: adapt the step */ \
	X(update, FitUpdate, OPT_CHOICE, FIT_UPDATE_STGD, CHOICES(fit_update_names), 0, 0, true, SQL_ALL) \
	X(retraction, FitRetraction, OPT_CHOICE, FIT_RETRACT_POLAR, CHOICES(fit_retraction_names), 0, 0, true, SQL_ALL) \
	X(init, FitInit, OPT_CHOICE, FIT_INIT_BEST, CHOICES(fit_init_names), 0, 0, true, SQL_ALL) \
	X(seed, uint64, OPT_INT64, 0, NO_CHOICES, 0, 0, true, SQL_ALL) \
	X(center, FitCenter, OPT_CHOICE, FIT_CENTER_CLIENT, CHOICES(fit_center_names), 0, 0, true, SQL_ALL) \
	X(scale, FitScale, OPT_CHOICE, FIT_SCALE_NONE, CHOICES(fit_scale_names), 0, 0, true, SQL_ALL) /* fit_input.c applies it */ \
	X(weights, int, OPT_CHOICE, 0, CHOICES(fit_weights_names), 0, 0, true, SQL_ALL) /* 1: 'samples' */ \
	X(hops, int, OPT_INT, 4, NO_CHOICES, 0, 1000, true, SQL_ALL) /* lbfgs, init 'best': failed hops in a row */ \
	X(missing, int, OPT_CHOICE, PERPCA_MISSING_ERROR, CHOICES(perpca_missing_names), 0, 0, true, SQL_ALL) /* row_reader.h */ \
	X(verbose, bool, OPT_BOOL, 0, NO_CHOICES, 0, 0, false, SQL_ALL) \
	X(start, char *, OPT_TEXT, 0, NO_CHOICES, 0, 0, false, SQL_FIT | SQL_TRAIN) /* warm-start query */

#define FIT_OPTION_FIELD(name, type, ...) type name;

/* Every option of a fit, after defaults: what a model records and refresh reads back. */
typedef struct FitOptions
{
	FIT_OPTION_LIST(FIT_OPTION_FIELD)
	bool		step_given;
	const double *U0;			/* d x r1, for FIT_INIT_GIVEN */
} FitOptions;

/*
 * The parts of FitSums that are sums over clients of doubles: while they
 * are summed each is kept exactly (exact_sum.h), so that the result does
 * not depend on the order or grouping of the clients; fit_sums_round
 * writes the correctly rounded values into the fields below.
 */
typedef enum FitSumPart
{
	FIT_SUM_SCALARS,			/* weight, objective, gv (FIT_SUM_WEIGHT, ...) */
	FIT_SUM_U,					/* U, d x r1 */
	FIT_SUM_G,					/* G, d x r1 */
	FIT_SUM_GRAM,				/* gram, r1 x r1 */
	FIT_SUM_PARTS
} FitSumPart;

/* The entries of FIT_SUM_SCALARS. */
#define FIT_SUM_WEIGHT 0
#define FIT_SUM_OBJECTIVE 1
#define FIT_SUM_GV 2

/* Weighted sums over clients (raw weights w_i = 1 or n_i) that a node returns. */
typedef struct FitSums
{
	int			d;
	int			r1;
	struct ExactSum *acc[FIT_SUM_PARTS];	/* the exact sums of each part, NULL until used */
	double		weight;			/* sum w_i */
	double		objective;		/* sum w_i f_i */
	double	   *U;				/* d x r1: paper round sum w_i U_i; L-BFGS: sum w_i grad_i */
	double	   *G;				/* d x r1: sum w_i G_U,i (paper round and finish) */
	double		gv;				/* sum w_i ||G_V,i||^2 */
	double		change;			/* largest local projector change */
	double	   *gram;			/* r1 x r1: sum w_i U'S_iU (finish) */
	int			exact;			/* best responses solved exactly */
	int64		products;		/* the clients' operator products (S_i X or Gram) */
	int64		iterations;		/* the clients' inner eigensolver iterations */
} FitSums;

/* Where the clients are: one node (local) or shards (federated.c). */
typedef struct FitBackend FitBackend;
struct FitBackend
{
	void	   *state;
	int			d;
	int			r1;
	int			nclients;
	double		weight;			/* sum_i w_i */
	double		lambda_max;		/* max_i lambda_max(S_i) */
	int64		setup_rounds;	/* round trips spent on starts (apply, basis) */
	/* d x q basis B, B B' = sum_i L_i D_i L_i' (D_i = I, or w_i Lambda_i for qu) */
	double	   *(*basis) (FitBackend *be, bool qu, bool exact, int *q);
	/* out (d x q) = sum_i w_i S_i X */
	void		(*apply) (FitBackend *be, const double *X, int q, double *out);
	/* the paper solver's V_i start given U: own PCs, random or given */
	void		(*start_local) (FitBackend *be, const double *U, FitInit how);
	/* one paper round: client steps against U */
	void		(*round) (FitBackend *be, const double *U, double step, FitUpdate update,
						  FitRetraction retraction, bool want_kkt, FitSums *out);
	/* one L-BFGS evaluation: best responses against U to residual tol */
	void		(*evaluate) (FitBackend *be, const double *U, double tol, FitSums *out);
	/* final: V_i feasible against U (best response for L-BFGS), ordered */
	void		(*finish) (FitBackend *be, const double *U, bool best_response, FitSums *out);
};

/* Starts and hops of one fit, at most. */
#define FIT_MAX_STARTS 64

/* How a run (a start, a hop) ended (perpca_last_fit_starts.ended; fit_end_names). */
typedef enum FitEnd
{
	FIT_END_CONVERGED,			/* gradient norm within the tolerance */
	FIT_END_SCREENED,			/* within the search's screening tolerance; not the winner, not polished */
	FIT_END_KNOWN_BASIN,		/* came into the basin of an optimum found before (the watch) */
	FIT_END_BUDGET,				/* its share of the rounds ran out (a hop's budget, the paper's probe) */
	FIT_END_ROUND_LIMIT,		/* the fit's rounds ran out */
	FIT_END_STALLED,			/* no step improves the objective or the gradient */
	FIT_END_FLAT,				/* the objective converged where U cannot: a flat spectrum */
	FIT_END_NONE				/* did not run */
} FitEnd;

/* One start's outcome (perpca_last_fit_starts). */
typedef struct FitStartReport
{
	const char *name;
	double		objective;
	int			rounds;
	bool		converged;
	FitEnd		ended;
	int			basin;			/* the start that found the optimum it ended at, or -1 (none known) */
} FitStartReport;

/* One round of the trace (perpca_last_fit_rounds). */
typedef struct FitTraceRow
{
	int			start;			/* index into the starts */
	int			round;
	double		objective;
	double		gradient_norm;
	double		kkt_residual;
	double		step;
	int64		products;		/* the clients' operator products in this round */
	int64		iterations;		/* the clients' inner eigensolver iterations in this round */
} FitTraceRow;

/*
 * One client's share of the bound a sketch puts on the objective
 * (perpca_last_fit_clients): with S_i - S^_i = (M2 - B'B) / n_i between 0
 * and delta_i / n_i I, for any k_i orthonormal components W_i,
 *   0 <= f_i - f^_i = 1/2 tr(W_i'(S_i - S^_i)W_i) <= 1/2 k_i delta_i / n_i = bound,
 * in f_i's units; 0 for exact statistics (fit_input.c computes it).
 */
typedef struct FitClientBound
{
	const char *client;
	int64		n;				/* rows of the client (exact) */
	int			rows;			/* rows of its sketch's B (at most ell); 0 for exact statistics */
	double		delta;			/* delta_i, in M2's (scaled) units; 0 for exact statistics */
	int			components;		/* k_i: global plus local components the objective counts */
	double		bound;			/* 1/2 k_i delta_i / n_i */
} FitClientBound;

/* Diagnostics of one fit (perpca_last_fit and friends). */
typedef struct FitDiagnostics
{
	FitOptions	opts;			/* effective options */
	int			rounds;			/* rounds of all starts (0 for one-shot methods) */
	bool		converged;
	double		objective;		/* sum_i N w_i f_i / sum w_i (the paper's f for equal weights) */
	double		kkt_residual;
	double		gradient_norm;	/* ||Riemannian gradient of f/N|| at the end */
	double		theta_est;
	double		step;
	double		lambda_max;		/* max_i lambda_max(S_i): the scale of the tolerance */
	int			n_clients;
	int			dim;
	int64		rows_skipped;	/* rows the clients' statistics left out (perpca_stats(x, 'skip')) */
	/*
	 * The sketch's bound in the objective's units: 0 <= exact objective -
	 * sketched objective <= sketch_bound = N / sum w_i * sum_i w_i bound_i
	 * (0 for exact inputs); per client in client_bounds (nbounds of them).
	 */
	double		sketch_bound;
	double	   *pooled_mean;	/* dim: the clients' pooled mean when one is sketched (for the model), else NULL */
	int			nbounds;
	FitClientBound *client_bounds;
	double	   *scale_factors;	/* dim divisors the input was divided by (scale 'standard'), or NULL */
	bool	   *constant;		/* dim: the features left at divisor 1 (zero variance), or NULL */
	double		seconds;
	int			chosen;			/* index of the winning start, -1 if none */
	char		stop[256];		/* why the fit (its search) stopped, in words */
	int			nstarts;
	int			current;		/* the start the solver runs now (trace rows) */
	FitStartReport starts[FIT_MAX_STARTS];
	int			ntrace;
	int			tracecap;
	FitTraceRow *trace;
	/* federated only */
	int			n_shards;
	int64		setup_bytes;
	int64		round_bytes;
	int64		result_bytes;
	int64		round_binary_bytes;
	int64		stats_binary_bytes;
} FitDiagnostics;

/* The result of a fit: U and its variances; local components are in the backend's nodes. */
typedef struct FitResult
{
	double	   *U;				/* d x rU */
	int			rU;
	double	   *uvariance;		/* rU */
} FitResult;

/*
 * A solver: one row of the solver table (fit_solvers, fit.c), all that a
 * fit asks of it.  Hooks: start sets the clients' V_i of a start given U
 * (NULL: the solver needs none); run runs one start from U for at most
 * rounds rounds, fills rep's objective, convergence and end, and returns
 * the rounds run (aid: what its own search lends it, else NULL); search
 * runs the starts and hops of one fit (fit_search.c has two).  A hook is
 * declared with its macro, fn its name (or (*name) for a pointer).
 */
typedef struct FitSolverDef FitSolverDef;
#define FIT_SOLVER_START(fn) void fn(FitBackend *be, const double *U, FitInit how)
#define FIT_SOLVER_RUN(fn) int fn(FitBackend *be, const FitOptions *opts, double *U, int rounds, \
								  FitDiagnostics *diag, FitStartReport *rep, void *aid)
#define FIT_SOLVER_SEARCH(fn) void fn(FitBackend *be, const FitOptions *opts, \
									  const FitSolverDef *solver, double *U, FitDiagnostics *diag)
struct FitSolverDef
{
	const char *name;			/* its value of the option solver */
	double		tolerance;		/* the default tolerance, in its own measure of convergence */
	bool		exact_starts;	/* starts solved exactly (else loosely: the solver refines them) */
	bool		qu_start;		/* init 'best' also tries Qu's start */
	bool		best_response;	/* the final V_i are best responses to U */
	bool		warm_given;		/* a warm refresh starts from the stored components alone (init 'given'), else they join init 'best' */
	FIT_SOLVER_START((*start));
	FIT_SOLVER_RUN((*run));
	FIT_SOLVER_SEARCH((*search));
};

#endif							/* PERPCA_FIT_TYPES_H */
