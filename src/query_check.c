/*
 * query_check.c -- every query text perpca runs is exactly one SELECT
 *
 * perpca runs SQL text its callers write: a model's query, a warm start, the
 * rows of perpca_fit, perpca_evaluate and perpca_choose_ranks, a shard's
 * query.  Each such text is checked here, once, before it is planned or run:
 * it must parse as exactly one SELECT (VALUES and TABLE are SELECTs too),
 * without INTO (which creates a table) and without a data-modifying WITH.
 * Anything else is refused with feature_not_supported (0A000), the SQLSTATE
 * a read-only SPI call gives a second statement.  The check is the raw
 * parser's, so it needs no catalog and no search_path.
 */
#include "postgres.h"

#include "fmgr.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "tcop/cmdtag.h"
#include "tcop/utility.h"
#include "utils/builtins.h"

#include "error_kinds.h"
#include "perpca.h"


static void
refuse(const char *what, const char *detail)
{
	ereport(ERROR,
			(errcode(PERPCA_ERRCODE_NOT_ONE_SELECT),
			 errmsg("%s must be exactly one SELECT", what),
			 errdetail("%s", detail),
			 errhint("Pass one SELECT, VALUES or TABLE statement: perpca runs nothing else.")));
}

/* A syntax error's position is in the query text, as SPI reports it. */
static void
syntax_error_callback(void *arg)
{
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery((const char *) arg);
	}
}

/* Whether a SELECT has a data-modifying WITH, at its top or in a set operation's branch. */
static bool
select_modifies(SelectStmt *s)
{
	ListCell   *lc;

	if (s == NULL)
		return false;
	if (s->withClause != NULL)
		foreach(lc, s->withClause->ctes)
		{
			Node	   *q = ((CommonTableExpr *) lfirst(lc))->ctequery;

			if (!IsA(q, SelectStmt) || select_modifies((SelectStmt *) q))
				return true;
		}
	return select_modifies(s->larg) || select_modifies(s->rarg);
}

/*
 * Check that query is exactly one SELECT (what names it in the error) and
 * return that statement's own text, without the semicolons after it: text
 * that can be written after "AS " or inside parentheses as it stands.
 */
char *
perpca_one_select(const char *query, const char *what)
{
	ErrorContextCallback errcallback = {error_context_stack, syntax_error_callback, (void *) query};
	List	   *stmts;
	RawStmt    *raw;
	SelectStmt *sel;

	error_context_stack = &errcallback;
	stmts = raw_parser(query, RAW_PARSE_DEFAULT);
	error_context_stack = errcallback.previous;
	if (list_length(stmts) != 1)
		refuse(what, list_length(stmts) == 0 ? "It is empty."
			   : psprintf("It is %d statements.", list_length(stmts)));
	raw = linitial_node(RawStmt, stmts);
	if (!IsA(raw->stmt, SelectStmt))
		refuse(what, psprintf("It is a %s statement.",
							  GetCommandTagName(CreateCommandTag(raw->stmt))));
	sel = (SelectStmt *) raw->stmt;
	if (sel->intoClause != NULL)
		refuse(what, "SELECT INTO creates a table.");
	if (select_modifies(sel))
		refuse(what, "It has a data-modifying statement in WITH.");
	return raw->stmt_len > 0 ? pnstrdup(query + raw->stmt_location, raw->stmt_len)
		: pstrdup(query + raw->stmt_location);
}
