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

#endif							/* PERPCA_PG_COMPAT_H */
