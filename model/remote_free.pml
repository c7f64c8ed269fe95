/* vigil remote-free protocol (src/heap.c: vg_heap_free_remote, vg_heap_drain,
 * vg_heap_abandon) under a weak memory model.  See model/README.md.
 *
 * Two producers push blocks they do not own on the owner's `remote` stack:
 *     h = remote (relaxed);
 *     loop: b->next = h (plain store); CAS(remote, h -> b) RELEASE / relaxed
 *           on failure (h := current value) ... until success or h == CLOSED
 *     (CLOSED: the block is freed through the arena instead).
 * The owner takes the whole stack once (exchange 0, ACQUIRE), walks it by
 * reading each b->next, then closes the stack (exchange CLOSED, ACQ_REL) and
 * walks what it got.
 *
 * Memory: `remote` is an atomic location only ever changed by read-modify-
 * writes, so it is one coherent variable.  A link field b->next is plain
 * memory: every store goes to a per-location history (program order per
 * location is coherence order).  A store is first pending in its thread's
 * store buffer; the Flush process makes pending stores visible one at a time,
 * in any order across locations.  A RELEASE makes all of the thread's earlier
 * stores visible first and records them as released (rel).  An ACQUIRE read
 * of `remote` synchronises with every earlier release on it (release
 * sequence: all writes to `remote` are RMWs), so it raises the owner's lower
 * bound (lb) to rel.  A read of b->next by the owner may return any version
 * between its lower bound and the newest visible one: version 0 is the
 * garbage the block held before the producer wrote its link.
 *
 * Orders are selectable: -DPUSH_RELAXED, -DTAKE_RELAXED, -DCLOSE_RELAXED.
 *
 * heap.c pushes a batch: a chain of blocks whose links (rnext) and tags the
 * producer wrote with plain stores before the one CAS that publishes the
 * chain.  The model pushes one block per CAS.  A chain only adds plain
 * stores before the same release, which publishes all of the thread's
 * earlier stores, so the property carries over; the model does not
 * enumerate chains.
 */

#define NB      3       /* blocks 1..3: producer 0 pushes 1 and 2, producer 1 pushes 3 */
#define NULLB   0
#define CLOSED  4       /* VG_REMOTE_CLOSED */
#define GARBAGE 5       /* (printed as 5) what a link field holds before its producer writes it */
#define K       4       /* history slots per link field (bounded retries) */

typedef Loc {
  byte val[K + 1];      /* val[0]: initial garbage; val[1..n]: stores in order */
  byte n;               /* stores issued */
  byte vis;             /* stores visible to the other threads (prefix) */
  byte rel;             /* stores published by a release */
  byte lb;              /* oldest version the owner may still read */
};

byte remote = NULLB;    /* the heap's remote head: atomic */
Loc  loc[NB + 1];       /* loc[b]: the link field b->next */
byte expect[NB + 1];    /* the link written in the successful push */
bit  pushed[NB + 1];
byte taken[NB + 1];     /* times the owner walked over the block */
byte viaarena[NB + 1];  /* freed through the arena after CLOSED */
byte done = 0;

/* RELEASE by the producer owning blocks first..last: its stores become
 * visible before the release operation, and are published. */
inline release(first, last) {
  i = first;
  do
  :: i > last -> break
  :: else -> loc[i].vis = loc[i].n; loc[i].rel = loc[i].n; i++
  od
}

/* ACQUIRE read of remote: later reads see at least what was released. */
inline acquire() {
  i = 1;
  do
  :: i > NB -> break
  :: else -> if :: loc[i].lb < loc[i].rel -> loc[i].lb = loc[i].rel :: else -> skip fi; i++
  od
}

proctype Producer(byte first; byte last) {
  byte b = first, h, i;
  bit ok;
  do
  :: b > last -> break
  :: else ->
     h = remote;                           /* relaxed load */
     ok = 0;
     do
     :: ok -> break
     :: !ok && h == CLOSED ->              /* freed under the arena lock */
        viaarena[b]++;
        printf("MSC: P%d: remote CLOSED, b%d freed via the arena\n", _pid - 2, b); break
     :: !ok && h != CLOSED ->
        /* b->next = h: a plain store, pending in the store buffer */
        d_step {
          assert(loc[b].n < K);
          loc[b].n++;
          loc[b].val[loc[b].n] = h;
          printf("MSC: P%d: b%d->next = %d (store %d, pending)\n", _pid - 2, b, h, loc[b].n)
        }
        atomic {
          if
          :: remote == h ->
#ifndef PUSH_RELAXED
             release(first, last);
#endif
             remote = b; expect[b] = h; pushed[b] = 1; ok = 1;
             printf("MSC: P%d: CAS remote %d -> b%d succeeds\n", _pid - 2, h, b)
          :: else ->
             h = remote                    /* failure: relaxed, no flush */
          fi
        }
     od;
     b++
  od;
  done++
}

/* Store buffers drain in any order, one store at a time. */
active proctype Flush() {
  byte j;
end:
  do
  :: atomic {
       j = 1;
       do
       :: j <= NB && loc[j].vis < loc[j].n -> loc[j].vis++;
          printf("MSC: flush: store %d to b%d->next visible\n", loc[j].vis, j); break
       :: j <= NB -> j++
       :: j > NB -> break                 /* nothing chosen */
       od
     }
  od
}

/* Walk a taken list: each link read may be any version the owner can see. */
inline walk(l) {
  do
  :: l == NULLB -> break
  :: else ->
     assert(l >= 1 && l <= NB);            /* a real block, not garbage */
     b = l;
     assert(pushed[b] && taken[b] == 0);   /* pushed, and not seen twice */
     taken[b]++;
     atomic {
       v = loc[b].lb;
       do
       :: v < loc[b].vis -> v++
       :: break
       od;
       nxt = loc[b].val[v];
       printf("MSC: owner: b%d->next reads %d (store %d; %d visible; producer wrote %d)\n",
              b, nxt, v, loc[b].vis, expect[b])
     }
     assert(nxt == expect[b]);             /* the link its producer wrote */
     l = nxt
  od
}

proctype Owner() {
  byte l, b, v, nxt, i;
  /* vg_heap_drain: take the whole stack */
  atomic {
    l = remote; remote = NULLB;
    printf("MSC: owner: take-all exchange gets %d\n", l);
#ifndef TAKE_RELAXED
    acquire();
#endif
  }
  walk(l);
  /* vg_heap_abandon: close the stack, drain what was pushed before */
  atomic {
    l = remote; remote = CLOSED;
    printf("MSC: owner: close exchange gets %d\n", l);
#ifndef CLOSE_RELAXED
    acquire();
#endif
  }
  walk(l);
  done++
}

init {
  byte k;
  atomic {
    k = 1;
    do
    :: k > NB -> break
    :: else -> loc[k].val[0] = GARBAGE; k++
    od;
    run Producer(1, 2);
    run Producer(3, 3);
    run Owner()
  }
  done == 3;
  /* nothing lost, nothing twice: each block was taken or went to the arena */
  k = 1;
  do
  :: k > NB -> break
  :: else -> assert(taken[k] + viaarena[k] == 1); k++
  od
}
