#!/usr/bin/env bash
# The bootstrap under LD_PRELOAD: vigil must come up without recursion when
# its first call comes from a constructor, when its own pthread key is past
# the first 32 (pthread_setspecific then calls calloc, i.e. vigil, while vigil
# is making the thread's heap), when dlopen/dlsym/dlerror allocate, and when
# a dlopened library's TLS is allocated on first use in a new thread.
set -euo pipefail
BUILD=${BUILD:-build}
CC=${CC:-gcc}
lib=$(realpath "$BUILD/libvigil.so")
dir=$BUILD/bootstrap
mkdir -p "$dir"

cat >"$dir/libctor.c" <<'C'
#include <stdlib.h>
#include <string.h>
__thread char tls_block[4096] = {1};  /* dynamic TLS: malloc'd on first use */
char *made_in_ctor;
__attribute__((constructor)) static void ctor(void) { made_in_ctor = strdup("from the library's constructor"); }
int touch_tls(void) { tls_block[4095] = 7; return tls_block[0] + tls_block[4095]; }
C
cat >"$dir/prog.c" <<'C'
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char *early;
/* Runs before anything else of ours: 40 keys first, so vigil's own key
 * lands past the first 32, then the first allocation of the process. */
__attribute__((constructor(101))) static void first(void) {
  pthread_key_t k;
  for (int i = 0; i < 40; i++) pthread_key_create(&k, NULL);
  early = malloc(100);
  strcpy(early, "from the program's constructor");
}

static void *use_tls(void *arg) {
  int (*touch)(void) = (int (*)(void))arg;
  return (void *)(long)touch();
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  if (dlopen("libdoes-not-exist-vigil.so", RTLD_NOW) != NULL || dlerror() == NULL) return 3;
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) { fprintf(stderr, "%s\n", dlerror()); return 4; }
  int (*touch)(void) = (int (*)(void))dlsym(h, "touch_tls");
  char **made = dlsym(h, "made_in_ctor");
  if (!touch || !made || !*made) return 5;
  for (int i = 0; i < 8; i++) {
    pthread_t t;
    void *r;
    pthread_create(&t, NULL, use_tls, (void *)touch);
    pthread_join(t, &r);
    if ((long)r != 8) return 6;
  }
  pid_t pid = fork();
  if (pid == 0) _exit(malloc(10) ? 0 : 1);
  int st;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st)) return 7;
  printf("%s; %s; ok\n", early, *made);
  free(early);
  dlclose(h);
  return 0;
}
C
"$CC" -O1 -g -fPIC -shared -o "$dir/libctor.so" "$dir/libctor.c"
"$CC" -O1 -g -pthread -o "$dir/prog" "$dir/prog.c" -ldl

plain=$("$dir/prog" "$(realpath "$dir/libctor.so")")
out=$(LD_PRELOAD=$lib VIGIL_OPTIONS=stats_on_exit=1 "$dir/prog" "$(realpath "$dir/libctor.so")" 2>"$dir/stderr") || {
  echo "FAIL: preloaded run exited $?"; cat "$dir/stderr"; exit 1; }
echo "plain:     $plain"
echo "preloaded: $out"
[ "$out" = "$plain" ] || { echo "FAIL: output differs"; exit 1; }
grep -q '^vigil: exit: .*mapped_ever=[1-9]' "$dir/stderr" || {
  echo "FAIL: vigil did not serve the process:"; cat "$dir/stderr"; exit 1; }
echo "ok: constructors, 40 pthread keys first, dlopen/dlerror, dynamic TLS, fork"
