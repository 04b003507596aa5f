/*
 * node.h -- the clients of a fit that live on this server, as weighted sums
 *
 * A node owns its clients (client_math.c) and answers the fit's questions about
 * all of them at once: the sums of FitSums.  perpca_fit runs its fit on one
 * node through node_backend(); each shard of perpca_fit_federated runs the
 * same backend behind the perpca_internal.shard_* SQL functions.
 */
#ifndef PERPCA_NODE_H
#define PERPCA_NODE_H

#include "fit_types.h"

typedef struct FitNode
{
	int			d;
	int			r1;
	int			n;				/* clients */
	FitClient  *clients;
	FitLocalPCs *pcs;			/* each client's top k_i eigenpairs, once computed */
	bool		pcs_exact;
	int		   *order;			/* the clients in the byte order of their keys (sums run in it), or NULL */
} FitNode;

/* A node over clients whose S_i, r2, weight and seed are set. */
extern FitNode *node_create(int d, int r1, int n, FitClient *clients);

/*
 * The FitBackend that runs everything on this node; its basis is the
 * stacked local PCs, d x q, each client's k_i columns in the byte order of
 * their keys (node->order): B B' = sum_i L_i D_i L_i'.
 */
extern FitBackend *node_backend(FitNode *node);

/* The exact sum sum_i w_i S_i X (d x q entries), for a shard to ship. */
extern struct ExactSum *node_apply_exact(FitNode *node, const double *X, int q);

/* theta_est of the node's local components, with total weight W (NaN without any). */
extern double node_theta(const FitNode *node, double W);

#endif							/* PERPCA_NODE_H */
