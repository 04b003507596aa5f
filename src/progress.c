/*
 * progress.c -- progress of long work: the setting perpca.progress_rows, and
 * the phase of a long call shown in pg_stat_activity.query
 */
#include "postgres.h"

#include <limits.h>
#include <stdarg.h>

#include "access/xact.h"
#include "pgstat.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "perpca.h"

/* perpca.progress_rows: report statistics scans every this many rows (0 = off). */
int			perpca_progress_rows = 0;

/* Does pg_stat_activity.query show a phase of ours instead of the statement? */
static bool phase_shown = false;

/* The statement text a phase replaced (debug_query_string is gone at abort). */
static char *saved_activity = NULL;

/* At the end of a transaction (also an aborted one) show the statement again. */
static void
restore_activity(XactEvent event, void *arg pg_attribute_unused())
{
	if (phase_shown && (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
						event == XACT_EVENT_PARALLEL_COMMIT ||
						event == XACT_EVENT_PARALLEL_ABORT))
		perpca_restore_activity();
}

/* The setting perpca.progress_rows, and the statement shown again at transaction end. */
void
perpca_progress_init(void)
{
	RegisterXactCallback(restore_activity, NULL);
	DefineCustomIntVariable("perpca.progress_rows",
							"Report the progress of perpca_stats scans every this many rows.",
							"Each process that aggregates sends a NOTICE and shows the count in "
							"pg_stat_activity.query; 0 turns reporting off.",
							&perpca_progress_rows, 0, 0, INT_MAX,
							PGC_USERSET, 0, NULL, NULL, NULL);
}

/*
 * Show a long call's phase in pg_stat_activity.query (printf-style), as a
 * comment in front of the statement, "/\* phase *\/ statement": the operator
 * still sees which statement runs.
 */
void
perpca_report_phase(const char *fmt,...)
{
	char		phase[256];
	char	   *buf;
	va_list		args;

	va_start(args, fmt);
	vsnprintf(phase, sizeof(phase), fmt, args);
	va_end(args);
	if (!phase_shown)
	{
		if (saved_activity == NULL)
			saved_activity = MemoryContextAlloc(TopMemoryContext, pgstat_track_activity_query_size);
		strlcpy(saved_activity, debug_query_string ? debug_query_string : "",
				pgstat_track_activity_query_size);
	}
	buf = psprintf("/* %s */ %s", phase, saved_activity);
	pgstat_report_activity(STATE_RUNNING, buf);
	pfree(buf);
	phase_shown = true;
}

/* Show the statement again in pg_stat_activity.query after a phase. */
void
perpca_restore_activity(void)
{
	if (!phase_shown)
		return;
	pgstat_report_activity(STATE_RUNNING, saved_activity);
	phase_shown = false;
}
