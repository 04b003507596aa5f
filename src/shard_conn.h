/*
 * shard_conn.h -- libpq connections from the federated coordinator to its
 * shards (shard_conn.c): interruptible connect, send, wait, errors rethrown
 * with the shard's SQLSTATE, and exact text forms of matrices.
 */
#ifndef PERPCA_SHARD_CONN_H
#define PERPCA_SHARD_CONN_H

#include "postgres.h"

#include "libpq-fe.h"

typedef struct ShardConn
{
	PGconn	   *conn;			/* malloc'd by libpq: closed in fed_disconnect_all */
	int			index;			/* 1-based, for messages */
	bool		busy;			/* a command was sent and its result not read */
	int64		sent;			/* bytes of commands and parameters sent */
	int64		received;		/* bytes of result values received */
} ShardConn;

/* A shard's answer: nrows x ncols text values (NULL for SQL NULL). */
typedef struct ShardRows
{
	int			nrows;
	int			ncols;
	char	  **values;
} ShardRows;

#define SHARD_VALUE(r, i, j) ((r)->values[(i) * (r)->ncols + (j)])

/* Send one command with text parameters to a shard (its result is read by fed_get). */
extern void fed_send(ShardConn *sc, const char *sql, int nparams, const char *const *params);

/* Wait for the result of the command sent to sc; the shard's error is rethrown. */
extern ShardRows *fed_get(ShardConn *sc);

/* Cancel a busy shard's command and close every connection (never raises). */
extern void fed_disconnect_all(ShardConn *sc, int n);

/* Connect to every shard, check that perpca is installed there, and ask for exact floats. */
extern void fed_connect_all(ShardConn *sc, int n, char **conninfo);

/* The m x n matrix A as a 2-D float8[] literal with exact (17-digit) values. */
extern char *fed_matrix_text(const double *A, int m, int n);

/* A shard's float8[] value as a checked matrix; *m, *n expected (-1: any), set to the actual. */
extern double *fed_matrix_parse(const ShardConn *sc, const char *text, int *m, int *n,
								const char *what);

/* A shard's float8 value (text), checked to be finite. */
extern double fed_float_parse(const ShardConn *sc, const char *text, const char *what);

#endif							/* PERPCA_SHARD_CONN_H */
