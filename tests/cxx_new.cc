// C++'s operator new and delete from vigil (src/cxx.c), every form, in a
// C++ program that preloads libvigil.so (tests/cxx_new.sh runs it).
//   cxx_new            every form of new and delete with honest sizes; new
//                      of an impossible size throws std::bad_alloc (through
//                      vigil's C frames) after calling the new_handler;
//                      nothrow new returns nullptr; aligned new aligns
//   cxx_new sized      a sized delete with a size the block cannot have
//   cxx_new aligned    an aligned delete with an alignment the block lacks
// The last two must die with vigil's message: libstdc++'s own operators
// ignore both, so that message shows vigil's are the ones in use.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

static int fails;
#define CHECK(c, ...)                                                  \
  do {                                                                 \
    if (!(c)) {                                                        \
      fails++;                                                         \
      std::fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #c); \
      std::fprintf(stderr, __VA_ARGS__);                               \
      std::fputc('\n', stderr);                                        \
    }                                                                  \
  } while (0)

struct alignas(256) Wide {
  char c[300];
};
static int handler_calls;
static void handler() {
  handler_calls++;
  std::set_new_handler(nullptr); // the next failure throws
}

static void *volatile sink;

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "";
  if (std::strcmp(what, "sized") == 0) {
    char *p = static_cast<char *>(::operator new(3000));
    ::operator delete(p, 100); // the block was asked with 3000 bytes
    return 0;
  }
  if (std::strcmp(what, "aligned") == 0) {
    char *p = static_cast<char *>(::operator new(100, std::align_val_t(64)));
    while ((reinterpret_cast<std::uintptr_t>(p) & ((1u << 20) - 1)) == 0) p = static_cast<char *>(::operator new(100, std::align_val_t(64)));
    ::operator delete(p, std::align_val_t(1 << 20));
    return 0;
  }
  // Every form, honest.
  for (std::size_t n : {0ul, 1ul, 100ul, 3000ul, 70000ul, 2ul << 20}) {
    void *p = ::operator new(n);
    ::operator delete(p, n);
    p = ::operator new[](n);
    ::operator delete[](p, n);
    p = ::operator new(n, std::nothrow);
    CHECK(p != nullptr, "nothrow new(%zu)", n);
    ::operator delete(p, std::nothrow);
    p = ::operator new[](n, std::nothrow);
    ::operator delete[](p, std::nothrow);
    for (std::size_t al : {32ul, 256ul, 4096ul, 65536ul}) {
      p = ::operator new(n, std::align_val_t(al));
      CHECK(reinterpret_cast<std::uintptr_t>(p) % al == 0, "new(%zu, align %zu) = %p", n, al, p);
      ::operator delete(p, n, std::align_val_t(al));
      p = ::operator new[](n, std::align_val_t(al));
      ::operator delete[](p, n, std::align_val_t(al));
      p = ::operator new(n, std::align_val_t(al), std::nothrow);
      ::operator delete(p, std::align_val_t(al), std::nothrow);
      p = ::operator new[](n, std::align_val_t(al), std::nothrow);
      ::operator delete[](p, std::align_val_t(al), std::nothrow);
      p = ::operator new(n, std::align_val_t(al));
      ::operator delete(p, std::align_val_t(al));
      p = ::operator new[](n, std::align_val_t(al));
      ::operator delete[](p, std::align_val_t(al));
    }
    p = ::operator new(n);
    ::operator delete(p);
    p = ::operator new[](n);
    ::operator delete[](p);
  }
  // What the compiler emits for objects and containers (sized deletes).
  Wide *w = new Wide;
  CHECK(reinterpret_cast<std::uintptr_t>(w) % 256 == 0, "new Wide = %p", static_cast<void *>(w));
  delete w;
  Wide *ws = new Wide[5];
  delete[] ws;
  std::vector<int> v;
  for (int i = 0; i < 100000; i++) v.push_back(i);
  CHECK(v[99999] == 99999, "vector");
  // Failure: the handler is called, then bad_alloc is thrown.
  std::set_new_handler(handler);
  bool thrown = false;
  try {
    sink = ::operator new(SIZE_MAX / 2);
  } catch (const std::bad_alloc &) {
    thrown = true;
  }
  CHECK(thrown, "new of SIZE_MAX/2 did not throw std::bad_alloc");
  CHECK(handler_calls == 1, "the new_handler was called %d times, want 1", handler_calls);
  CHECK(::operator new(SIZE_MAX / 2, std::nothrow) == nullptr, "nothrow new of SIZE_MAX/2 is not nullptr");
  thrown = false;
  try {
    sink = ::operator new[](SIZE_MAX / 2, std::align_val_t(4096));
  } catch (const std::bad_alloc &) {
    thrown = true;
  }
  CHECK(thrown, "aligned new[] of SIZE_MAX/2 did not throw std::bad_alloc");
  std::printf("cxx_new: %d failed\n", fails);
  return fails ? 1 : 0;
}
