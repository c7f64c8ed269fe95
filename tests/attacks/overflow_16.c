/* A linear overflow past the requested size: 16 bytes of 0x41. */
#include "attack.h"
ATTACK("tiny small medium large") { overflow_after(n, 16, 0x41); }
