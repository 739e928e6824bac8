/* bufplan — exec API; included by bufplan.h, not meant to be included alone. */
#ifndef BUFPLAN_EXEC_H
#define BUFPLAN_EXEC_H
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* BUFPLAN_EXEC_H */
