/* Placeholder until the planner lands. */
#include <bufplan.h>
int main(void) { return 0; }
