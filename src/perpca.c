/*
 * perpca.c -- module initialisation and progress reporting
 */
#include "postgres.h"

#include <stdarg.h>

#include "fmgr.h"
#include "pgstat.h"

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

/* Show a long call's phase in pg_stat_activity.query (printf-style). */
void
perpca_report_phase(const char *fmt,...)
{
	char		buf[256];
	va_list		args;

	va_start(args, fmt);
	vsnprintf(buf, sizeof(buf), fmt, args);
	va_end(args);
	pgstat_report_activity(STATE_RUNNING, buf);
}
