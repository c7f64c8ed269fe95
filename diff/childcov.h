/* The coverage of forked children, for libFuzzer.  libFuzzer counts edges
 * in the process's inline 8-bit counters (the __sancov_cntrs section); a
 * child's counters are its own copy, so what the corrupt target's child and
 * the oracle's fork children run was never seen.  Here the child moves its
 * counters into a file shared with the parent as its first act, and the
 * parent takes every counter's maximum after the child ends, however it
 * ended (an abort, a fault, a kill).
 *
 * Without libFuzzer's counters (the replay and AFL++ builds: AFL++'s map is
 * shared memory already), or with VIGIL_CHILDCOV=0 in the environment,
 * every call does nothing but childcov_wait's wait.  One child at a time:
 * the parent waits for it with childcov_wait before the next fork. */
#ifndef VIGIL_CHILDCOV_H
#define VIGIL_CHILDCOV_H

#include <sys/types.h>

/* Parent, before fork(): makes the shared file, once.  Child, first thing
 * after fork(): moves its counters there.  Parent: waits for the child (a
 * blocking waitpid, retried on EINTR), merges its counters into its own
 * and clears the file for the next child; returns what waitpid returned,
 * the status in *status. */
void childcov_prepare(void);
void childcov_child(void);
pid_t childcov_wait(pid_t pid, int *status);

#endif
