/*
 * citus_placement.h -- a model table that Citus replicates, read through this
 * node's own copy (citus_placement.c)
 */
#ifndef PERPCA_CITUS_PLACEMENT_H
#define PERPCA_CITUS_PLACEMENT_H

#include "postgres.h"

/*
 * The relation that holds relid's rows on this node: relid itself for a
 * plain table (and always without Citus), the local shard (locked
 * AccessShareLock) for a Citus reference table; an error for a distributed
 * table or a Citus table without a copy here.  model names the model in
 * messages.
 */
extern Oid	perpca_citus_local_placement(Oid relid, const char *model);

#endif							/* PERPCA_CITUS_PLACEMENT_H */
