/*
 * federated.h -- what the federated coordinator (federated.c) and the shard
 * functions (federated_shard.c) agree on
 *
 * The coordinator calls, over libpq, on every shard and in this order:
 *   perpca_shard_open(fit_id, query, n_global, n_local, weights)
 *   perpca_shard_init(fit_id, centre, init, update, retraction)
 *   perpca_shard_round(fit_id, u, step)            once per round
 *   perpca_shard_finish(fit_id, u), perpca_shard_result(fit_id)
 * A fit's state lives until perpca_shard_close(fit_id) or the end of the
 * shard backend (the coordinator closes its connection after every fit).
 */
#ifndef PERPCA_FEDERATED_H
#define PERPCA_FEDERATED_H

/* Valid values of init for a federated fit: the one-shot starts. */
extern const char *const federated_init_names[2];

#endif							/* PERPCA_FEDERATED_H */
