/*
 * pg_compat.h -- what differs between the PostgreSQL versions perpca builds
 * against (15, 17 and 18), in one place, by PG_VERSION_NUM
 *
 * Include after postgres.h (perpca.h does).  Each entry gives the newest
 * spelling and maps it onto the older servers, so the rest of the tree is
 * written for the newest one.
 */
#ifndef PERPCA_PG_COMPAT_H
#define PERPCA_PG_COMPAT_H

/*
 * PostgreSQL 18 marks functions that do not return with the pg_noreturn
 * prefix and removed the pg_attribute_noreturn() suffix; before 18 only the
 * attribute exists, which GCC and Clang also accept in front.
 */
#if PG_VERSION_NUM < 180000 && !defined(pg_noreturn)
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * PostgreSQL 16 replaced the per-kind privilege checks (pg_namespace_aclcheck,
 * ...) with object_aclcheck(catalog, object, role, mode); before 16 it maps
 * onto the per-kind function of each catalog the tree passes.
 */
#if PG_VERSION_NUM < 160000
#include "catalog/pg_namespace.h"
#include "utils/acl.h"

static inline AclResult
object_aclcheck(Oid classid, Oid objectid, Oid roleid, AclMode mode)
{
	if (classid == NamespaceRelationId)
		return pg_namespace_aclcheck(objectid, roleid, mode);
	elog(ERROR, "object_aclcheck: catalog %u is not mapped in pg_compat.h", classid);
	return ACLCHECK_NO_PRIV;	/* not reached */
}
#endif

/*
 * PostgreSQL 18 added LockAcquireExtended's last argument, logLockFailure
 * (log_lock_failures); perpca_lock_acquire() reports its memory errors and
 * logs no failure.
 */
#if PG_VERSION_NUM >= 180000
#define perpca_lock_acquire(tag, mode, session, dontwait, local) \
	LockAcquireExtended((tag), (mode), (session), (dontwait), true, (local), false)
#else
#define perpca_lock_acquire(tag, mode, session, dontwait, local) \
	LockAcquireExtended((tag), (mode), (session), (dontwait), true, (local))
#endif

#endif							/* PERPCA_PG_COMPAT_H */
