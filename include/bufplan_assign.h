/* bufplan — assign API (instances, CSV); included by bufplan.h. */
#ifndef BUFPLAN_ASSIGN_H
#define BUFPLAN_ASSIGN_H
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* BUFPLAN_ASSIGN_H */
