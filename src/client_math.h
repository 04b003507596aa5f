/*
 * client_math.h -- what one client of a fit computes, from its matrix S_i
 *
 * A client holds S_i dense (d x d) or thin (S_i = yscale Y'Y + delta
 * delta', Y its nrows x d centred rows, never formed); everything that reads
 * S_i goes through client_apply() or the exact solves, which pick the cheap
 * route for each form.  The client keeps W = [U, V_i] (d x k, k = r1 +
 * r2_i, U in the first r1 columns) and runs on it the paper's client step
 * (Algorithm 2) or the L-BFGS solver's best response.  Pure C over double
 * arrays: no SPI, no fmgr.
 */
#ifndef PERPCA_CLIENT_MATH_H
#define PERPCA_CLIENT_MATH_H

#include "postgres.h"

#include "eigen.h"

typedef enum FitUpdate
{
	FIT_UPDATE_STGD,			/* choice 1: tangent projection + gradient step */
	FIT_UPDATE_POLAR			/* choice 2: polar([U,V_i] + eta S_i [U,V_i]) */
} FitUpdate;

typedef struct FitClient
{
	/* S_i: dense, or thin (S == NULL) */
	const double *S;			/* d x d, full symmetric, row-major; or NULL */
	const double *Y;			/* thin: nrows x d */
	int			nrows;
	double		yscale;			/* thin: 1/n */
	const double *delta;		/* thin: d, or NULL */
	double		trace_extra;	/* sketch: (trace(M2) - ||B||_F^2) / n, what tr(S_i) lacks of the exact trace */
	/* shape and weight */
	int			d;
	int			r1;
	int			r2;				/* local components of this client */
	int			k;				/* r1 + r2 */
	double		weight;			/* w_i, unnormalized (1 or n_i) */
	int			lfirst;			/* output local components are W[:, lfirst:k] */
	uint64		seed;			/* this client's random stream (from its key) */
	const double *V0;			/* d x r2 start for init 'given' (or NULL) */
	/* iterate and scratch */
	double	   *W;				/* d x k: [U, V_i] */
	double	   *SW;				/* d x k: S_i W, then the tangent gradient */
	double	   *Ui;				/* d x r1: what the paper's client step sends */
	double	   *tmp;			/* d x k scratch */
	double	   *M;				/* k x k: W'S_iW at the round's start */
	double	   *variance;		/* k: w'S_iw of each output column */
	double		objective;		/* 1/2 tr(W'S_iW) at the round's start */
	double		change;			/* ||P_V(new) - P_V||_F of the last step */
	double		lambda_max;		/* lambda_max(S_i), 0 until computed */
	/* best response (L-BFGS): a warm block of b >= r2 columns orthogonal to U */
	double	   *X;				/* d x b (m x b for a thin client's Gram route), or NULL */
	int			b;
	double	   *ritz;			/* b Ritz values of the last best response */
	bool		warm;			/* X holds an exact or converged best response (the wide route's start) */
	double	   *Xprev;			/* d x b: the last d-space response's start block, or NULL */
	double	   *SXprev;			/* d x b: S_i Xprev, from that response's first product */
	double	   *FtF;			/* thin: F'F (m x m, m = rows + 1 with delta), once computed */
	double	   *pc_L;			/* d x max(k, 1): top eigenvectors of S_i (approximate), once computed */
	double	   *pc_lambda;		/* their eigenvalues; pc_lambda[0] = lambda_max */
	double	   *Lt;				/* small dense S_i of low rank: S_i = Lt'Lt to rounding (lrank x d), or NULL */
	double	   *Llambda;		/* its lrank eigenvalues (Lt Lt' = diag(Llambda)) */
	int			lrank;			/* 0 until examined, -1 when S_i has (nearly) full rank */
	bool		final_response; /* the fit's last best response: leave S_i W in SW where it is cheap */
	bool		sw_ready;		/* SW = S_i W for the current W (client_feasible, client_gradient use it) */
	bool		lazy_local;		/* paper rounds: V_i + step G_V left unretracted */
	bool		skip_change;	/* paper rounds: change not needed */
	int64		products;		/* operator products so far (S_i X, or the Gram matrix's) */
	int64		iterations;		/* inner eigensolver iterations so far */
	double	   *work;			/* LAPACK workspace, grown on demand */
	int64		worklen;
} FitClient;

/* One client's top k eigenpairs (local PCs), for the starts. */
typedef struct FitLocalPCs
{
	double	   *L;				/* d x k eigenvectors, descending */
	double	   *lambda;			/* k eigenvalues */
} FitLocalPCs;

/* Allocate the iterate and scratch of a client whose S_i, r2, weight are set. */
extern void client_setup(FitClient *c, int d, int r1);

/* out (d x k) = S_i W (W d x k). */
extern void client_apply(FitClient *c, const double *W, int k, double *out);

/* A (d x d) += alpha S_i (forms a thin client's matrix: only for dense-only paths). */
extern void client_add_dense(FitClient *c, double alpha, double *A);

/* lambda_max(S_i) (cached). */
extern double client_lambda_max(FitClient *c);

/* tr(S_i) without forming a thin S_i; for a sketch, the exact trace (its statistics keep it). */
extern double client_trace(const FitClient *c);

/* Exact top k eigenpairs of S_i, or of (I - P_U)S_i(I - P_U) when U is given; Z d x k (stride ldz). */
extern void client_top_eigen(FitClient *c, const double *U, int k, double *values,
							 double *Z, int ldz);

/* Top k_i eigenpairs of S_i: exact, or from the cached LOBPCG spectrum when !exact and d is large. */
extern void client_local_pcs(FitClient *c, bool exact, FitLocalPCs *pcs);

/* ---- the paper's client step (Algorithm 2) ---- */

/* W = [U, V_i] with V_i deflated against U twice (feasible to rounding). */
extern void client_feasible(FitClient *c, const double *U);

/* SW <- tangent gradient, M <- W'S_iW; returns 1/2 tr(W'S_iW). */
extern double client_gradient(FitClient *c);

/* One client step against U: deflate, gradient, St-GD or polar step; U_i into c->Ui. */
extern void client_paper_step(FitClient *c, const double *U, FitUpdate update,
							  FitRetraction retraction, double step);

/* V_i from the client's own PCs, given U (the one-shot starts' local part). */
extern void client_init_local(FitClient *c, const double *U, const FitLocalPCs *pcs);

/* Seeded Gaussian V_i (the paper's random start). */
extern void client_init_random(FitClient *c);

/* ---- the best response (L-BFGS) ---- */

/*
 * V_i = top r2 eigenvectors of (I - UU')S_i(I - UU') to a residual of tol,
 * W = [U, V_i]; returns f_i = 1/2 [tr(U'S_iU) + their eigenvalues] and adds
 * scale (I - V_iV_i')S_iU into G (d x r1); *exact: the exact solver was used.
 */
extern double client_best_response(FitClient *c, const double *U, double tol, double scale,
								   double *G, bool *exact);

/* Start the best response's block from the client's own top components (d-space clients). */
extern void client_seed_response(FitClient *c, const FitLocalPCs *pcs);

/* ---- output ---- */

/* Rotate W[:, lfirst:k] to decreasing variance, signs fixed; right after client_gradient on W. */
extern void client_order_local(FitClient *c);

#endif							/* PERPCA_CLIENT_MATH_H */
