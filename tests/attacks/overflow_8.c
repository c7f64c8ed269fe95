/* A linear overflow past the requested size: 8 bytes of 0x41. */
#include "attack.h"
ATTACK("tiny small medium large") { overflow_after(n, 8, 0x41); }
