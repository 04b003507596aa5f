/*
 * perpca.c -- module initialisation
 */
#include "postgres.h"

#include "fmgr.h"

#include "linalg.h"
#include "perpca.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* Load-time setup: BLAS must not start threads inside a backend. */
void
_PG_init(void)
{
	linalg_init();
}
