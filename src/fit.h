/*
 * fit.h -- the PerPCA algorithm over per-client second-moment matrices
 *
 * Problem (paper, problem (problem)): given client matrices S_i (d x d) and
 * weights w_i (sum 1), find U (d x r1) and V_i (d x r2_i) with
 * [U, V_i] orthonormal, maximizing  sum_i w_i 1/2 [tr(U'S_iU) + tr(V_i'S_iV_i)].
 *
 * One communication round (paper, Algorithm 2) is
 *   fit_client_step() for every client: deflate V_i against U and retract it,
 *       take a Stiefel gradient step from S_i, leave the client's U_i;
 *   fit_server_step(): U = retraction of sum_i w_i U_i.
 * Only U travels between the two, so a later version can run client steps
 * where the data live.  All matrices are row-major double arrays; a client's
 * [U, V_i] is one d x k_i block W (k_i = r1 + r2_i), U in its first r1 columns.
 *
 * Nothing here touches SPI or fmgr: fit_sql.c reads the clients and builds
 * the result rows.
 */
#ifndef PERPCA_FIT_H
#define PERPCA_FIT_H

#include "postgres.h"

typedef enum FitMethod
{
	FIT_METHOD_PERPCA,			/* federated rounds (Algorithm 2) */
	FIT_METHOD_DISPCA,			/* one-shot personalized distributed PCA */
	FIT_METHOD_CPCA,			/* PCA of the pooled matrix, r1 + r2 components */
	FIT_METHOD_INDIV			/* each client alone, r1 + r2_i components */
} FitMethod;

typedef enum FitUpdate
{
	FIT_UPDATE_STGD,			/* choice 1: tangent projection + gradient step */
	FIT_UPDATE_POLAR			/* choice 2: polar([U,V_i] + eta S_i [U,V_i]) */
} FitUpdate;

typedef enum FitRetraction
{
	FIT_RETRACT_POLAR,
	FIT_RETRACT_QR
} FitRetraction;

typedef enum FitInit
{
	FIT_INIT_BEST,				/* best objective after a short probe of dispca/qu/pooled */
	FIT_INIT_DISPCA,			/* U of the personalized disPCA (stacked local PCs) */
	FIT_INIT_QU,				/* the paper's one-round distributed PCA (Qu et al.) */
	FIT_INIT_POOLED,			/* top r1 of sum_i w_i S_i */
	FIT_INIT_RANDOM,			/* seeded Gaussian U and V_i */
	FIT_INIT_GIVEN				/* U0 and each client's V0 (C API, for warm starts) */
} FitInit;

typedef struct FitOptions
{
	FitMethod	method;
	int			rounds;			/* maximum communication rounds */
	double		tolerance;		/* stop when projectors move less; 0 = run all rounds */
	double		step;			/* <= 0: derived from the spectrum */
	bool		adaptive;		/* adapt the step between rounds */
	FitUpdate	update;
	FitRetraction retraction;
	FitInit		init;
	uint64		seed;
	bool		verbose;		/* NOTICE at rounds 1, 2, 5, 10, 20, 50, ... */
	int			n_local;		/* cpca keeps r1 + n_local pooled components */
	const double *U0;			/* d x r1, for FIT_INIT_GIVEN */
} FitOptions;

/*
 * One client: its matrix, weight, ranks and iterate.  S_i is given either
 * dense (S) or thin (S == NULL): S_i = yscale Y'Y + delta delta', with Y the
 * client's nrows x d centred rows and delta an optional d-vector (the offset
 * of the client's mean from the centre), so S_i is never formed.
 */
typedef struct FitClient
{
	const double *S;			/* d x d, full symmetric, row-major; or NULL */
	const double *Y;			/* thin: nrows x d */
	int			nrows;
	double		yscale;			/* thin: 1/n */
	const double *delta;		/* thin: d, or NULL */
	double		weight;			/* w_i, the weights sum to 1 */
	int			r2;				/* local components of this client */
	int			k;				/* r1 + r2 */
	int			lfirst;			/* output local components are W[:, lfirst:k] */
	const double *V0;			/* d x r2 start for FIT_INIT_GIVEN (or NULL) */
	double	   *W;				/* d x k: [U, V_i] */
	double	   *SW;				/* d x k: S_i W, then the tangent gradient */
	double	   *Ui;				/* d x r1: what the client sends to the server */
	double	   *tmp;			/* d x k scratch */
	double	   *M;				/* k x k: W'S_iW at the round's start */
	double	   *variance;		/* k: w'S_iw of each output column */
	double		objective;		/* 1/2 tr(W'S_iW) at the round's start */
	double		change;			/* ||P_V(new) - P_V||_F of the last step */
} FitClient;

/* Diagnostics of one fit (also what perpca_last_fit() shows). */
typedef struct FitDiagnostics
{
	FitMethod	method;
	int			rounds;			/* rounds run (0 for baselines) */
	bool		converged;		/* the stopping rule was met */
	double		objective;		/* sum_i N w_i f_i (the paper's f for equal weights) */
	double		kkt_residual;	/* ||sum_i w_i Q_i S_i U||^2 + sum_i w_i ||Q_i S_i V_i||^2 */
	double		theta_est;		/* 1 - lambda_max(sum_i w_i P_Vi) */
	double		step;			/* final step size */
	int			n_clients;
	int			dim;
	double		seconds;		/* filled in by fit_sql.c */
} FitDiagnostics;

typedef struct FitProblem
{
	int			d;
	int			r1;
	int			nclients;
	FitClient  *clients;
	double	   *U;				/* d x r1: the current global components */
	double	   *Ubar;			/* d x r1: the server's weighted average */
	double	   *Uprev;			/* d x r1: U of the previous round */
	double	   *Mom;			/* d x r1: the server's last move (momentum) */
	int			rU;				/* columns of U in the output (r1; r1 + n_local for cpca) */
	double	   *uvariance;		/* rU: sum_i w_i u'S_iu per global column */
	double	   *scratch;		/* (d + kmax) x kmax matrix scratch */
	double	   *work;			/* LAPACK workspace, grown on demand */
	int64		worklen;
	double		lambda_max;		/* max_i lambda_max(S_i) */
	double		step;
	double		kkt_residual;	/* at the start of the last round */
	double		objective;		/* at the start of the last round */
	double		change;			/* largest projector change of the last round */
	uint64		rng;			/* splitmix64 state */
	bool		lazy_local;		/* choice 1: leave V_i + step G_V unretracted (the next deflation orthonormalizes it) */
	bool		skip_change;	/* client steps leave change = 0 (no stopping rule reads it) */
} FitProblem;

/* Heavy-ball momentum of the server step when the step is adaptive. */
#define FIT_MOMENTUM 0.5

/* One client's top k_i eigenpairs: what the one-shot distributed PCAs send. */
typedef struct FitLocalPCs
{
	double	   *L;				/* d x k_i eigenvectors, descending */
	double	   *lambda;			/* k_i eigenvalues */
} FitLocalPCs;

/*
 * Set up a problem over nclients clients; clients[i].S, weight and r2 must be
 * filled in (and V0 for FIT_INIT_GIVEN).  Allocates in CurrentMemoryContext.
 */
extern FitProblem *fit_problem_create(int d, int r1, int nclients, FitClient *clients);

/* Run the method of opts; results stay in the problem (U, clients[i].W). */
extern void fit_run(FitProblem *p, const FitOptions *opts, FitDiagnostics *diag);

/* The two halves of a round, over the current U and one client's state. */
extern void fit_client_step(FitProblem *p, FitClient *c, FitUpdate update,
							FitRetraction retraction, double step);
extern void fit_server_step(FitProblem *p, FitRetraction retraction, double momentum);

/* S_i W for a d x k block W: the only place that reads S_i. */
extern void fit_client_apply(const FitProblem *p, const FitClient *c,
							 const double *W, int k, double *out);

/*
 * Pieces of fit_run for callers that drive the rounds themselves (the
 * federated shards and coordinator).  LAPACK workspace comes from the
 * problem; a LAPACK failure raises an error.
 */

/* Orthonormalize the m x n block A (stride lda): polar (Gram route, SVD when ill-conditioned) or QR. */
extern void fit_retract(FitProblem *p, FitRetraction how, int m, int n, double *A, int lda);

/* Top k eigenpairs of the symmetric d x d A (destroyed), vectors as columns of Z (stride ldz). */
extern void fit_eigh_top(FitProblem *p, int d, double *A, int k, double *values, double *Z, int ldz);

/* Top k left singular vectors of A (m x n, destroyed) into Z (stride ldz), singular values into sigma (or NULL). */
extern void fit_left_singular(FitProblem *p, int m, int n, double *A, int k, double *Z, int ldz,
							  double *sigma);

/* ||P_A - P_B||_F for orthonormal m x r blocks; scratch holds r * r + m * r doubles. */
extern double fit_projector_distance(int m, int r, const double *A, int lda, const double *B,
									 int ldb, double *scratch);

/* Top k eigenpairs of S_i, or of (I - P_U) S_i (I - P_U) when U is given. */
extern void fit_client_top_eigen(FitProblem *p, FitClient *c, const double *U, int k,
								 double *values, double *Z, int ldz);

/* Top k_i = r1 + r2_i eigenpairs of one S_i, or of every S_i. */
extern void fit_client_local_pcs(FitProblem *p, FitClient *c, FitLocalPCs *pcs);
extern FitLocalPCs *fit_local_pcs(FitProblem *p);

/* The d x sum k_i stacked local PCs (scaled by sqrt(w_i lambda_ij) for qu); *ncols = sum k_i. */
extern double *fit_stacked_pcs(const FitProblem *p, const FitLocalPCs *pcs, bool qu, int *ncols);

/* V_i from the client's own PCs, given the current U. */
extern void fit_init_local(FitProblem *p, FitClient *c, const FitLocalPCs *pcs);

/* V_i <- GR(V_i - U U'V_i) with the given retraction. */
extern void fit_client_deflate(FitProblem *p, FitClient *c, FitRetraction retraction);

/* W = [U, V_i] with V_i deflated against U twice (feasible to rounding). */
extern void fit_client_feasible(FitProblem *p, FitClient *c);

/* SW <- tangent gradient, M <- W'S_iW; returns 1/2 tr(W'S_iW). */
extern double fit_client_gradient(FitProblem *p, FitClient *c);

/* Rotate the client's local components to decreasing variance and fix their signs. */
extern void fit_order_local(FitProblem *p, FitClient *c);

/* The step of round 1: step when > 0, else derived from p->lambda_max. */
extern void fit_initial_step(FitProblem *p, double step);

/* The adaptive step after a round (halve and drop momentum when worse, else grow 10%). */
extern void fit_adapt_step(FitProblem *p, double previous, double previous_kkt);

/* Whether round t gets a verbose NOTICE (1, 2, 5, 10, 20, 50, ...). */
extern bool fit_report_round(int t);

#endif							/* PERPCA_FIT_H */
