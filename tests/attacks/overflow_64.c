/* A linear overflow past the requested size: 64 bytes of 0x41. */
#include "attack.h"
ATTACK("tiny small medium large") { overflow_after(n, 64, 0x41); }
