/* A linear overflow past the requested size: the NUL of a string one byte too long. */
#include "attack.h"
ATTACK("tiny small medium large") { overflow_after(n, 1, 0); }
