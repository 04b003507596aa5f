/*
 * init.c -- module initialisation
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "fit_span.h"
#include "linalg.h"
#include "perpca.h"
#include "stats.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* Load-time setup: BLAS must not start threads inside a backend; our GUCs. */
void
_PG_init(void)
{
	linalg_init();
	perpca_pgvector_init();		/* the aggregate's readers of vector and halfvec rows */
	perpca_progress_init();
	fit_span_init();
	MarkGUCPrefixReserved("perpca");
}
