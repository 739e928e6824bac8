/*
 * bufplan_api.h — BP_API marks the functions the shared library exports;
 * everything else in it is hidden (built with -fvisibility=hidden).
 * Included by every public header.
 */
#ifndef BUFPLAN_API_H
#define BUFPLAN_API_H

#if defined(__GNUC__) || defined(__clang__)
#define BP_API __attribute__((visibility("default")))
#else
#define BP_API
#endif

#endif /* BUFPLAN_API_H */
