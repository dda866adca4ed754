/* gate.c: the one definition of the counted path's gate (see gate.h). */
#include "gate.h"

struct pinshim_gate pinshim_gate;
