/* A fake block cloned onto a global, freed, and allocated again. */
#include "attack.h"
ATTACK("tiny") { fake_block(target, n); }
