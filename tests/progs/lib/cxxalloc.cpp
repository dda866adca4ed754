// cxxalloc.cpp: C++ allocations for reuseprog's "cxx" scenario (tests/bats/regcache.bats), in a
// library that reuseprog dlopens RTLD_LOCAL, as Python opens a C++ extension. Its C entry points
// allocate with new[] and std::vector (whose storage goes back through the sized delete) and
// exercise what operator new promises when the allocator fails: std::bad_alloc, the new-handler
// loop, nothrow's null. Under the shim these calls reach shim/hostmem/alloc.c's operator new and
// delete (libstdc++'s array, sized and nothrow forms call them through its PLT).
#include <cstddef>
#include <new>
#include <vector>

namespace {
const std::size_t too_big = std::size_t(1) << 62; // no allocator grants this; none touches memory for it
int handler_calls;

void handler_once()
{
    handler_calls++;
    std::set_new_handler(nullptr); // the next failure throws
}
} // namespace

extern "C" {

void *cxx_array_new(std::size_t n) { return new unsigned char[n]; }

void cxx_array_delete(void *p) { delete[] static_cast<unsigned char *>(p); }

void *cxx_vector_new(std::size_t n) { return new std::vector<unsigned char>(n); }

unsigned char *cxx_vector_data(void *v) { return static_cast<std::vector<unsigned char> *>(v)->data(); }

void cxx_vector_delete(void *v) { delete static_cast<std::vector<unsigned char> *>(v); }

// 1 when operator new of an impossible size throws std::bad_alloc.
int cxx_bad_alloc_caught(void)
{
    try {
        void *volatile p = ::operator new(too_big);
        ::operator delete(p);
    } catch (const std::bad_alloc &) {
        return 1;
    }
    return 0;
}

// How many times the new-handler ran before std::bad_alloc (1: it removes itself), -1 if nothing threw.
int cxx_new_handler_calls(void)
{
    handler_calls = 0;
    std::set_new_handler(handler_once);
    try {
        unsigned char *volatile p = new unsigned char[too_big];
        delete[] p;
    } catch (const std::bad_alloc &) {
        return handler_calls;
    }
    return -1;
}

// 1 when nothrow new of an impossible size returns null.
int cxx_nothrow_null(void)
{
    unsigned char *volatile p = new (std::nothrow) unsigned char[too_big];
    bool null = p == nullptr;
    delete[] p;
    return null;
}
}
