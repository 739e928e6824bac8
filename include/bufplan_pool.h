/* bufplan — pool API; included by bufplan.h, not meant to be included alone. */
#ifndef BUFPLAN_POOL_H
#define BUFPLAN_POOL_H
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* BUFPLAN_POOL_H */
