/* alloc_table_check.c: shim/hostmem/alloc_table.c (compiled in here, with alloc_events.c for the
 * watched bases) against a plain list of the same records, through random sequences of the ways the
 * registration cache uses it: allocations placed among others (the records a new one overlaps
 * removed first, as regcache.c's on_alloc does), frees of random records, a buffer freed and
 * allocated again at its address (the fresh-tensor step, which must fill the hole it left), runs of
 * frees with no allocation between (the holes squeezed out), registrations set on records. After
 * every step: the slots' bases strictly increase, the holes counted are the holes there, the holes
 * stay under their bound; every record is found by its base and by its first and last byte, no
 * record is found for a byte between records, the range queries give exactly the records the list
 * does, the watched-bases filter watches every base; every 1000 steps, the filter counts exactly the
 * live bases hashing to each slot (so a free that finds its slot empty is rightly not told). Prints "alloc_table: N steps as the list" or
 * the first difference and exits 1. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "../../shim/hostmem/alloc_events.c"
#include "../../shim/hostmem/alloc_table.c"

/* What alloc_table.c takes from the rest of the shim. */
void *alloc_next_malloc(size_t n) { return malloc(n); }
void *alloc_next_calloc(size_t count, size_t size) { return calloc(count, size); }
void *alloc_next_realloc(void *p, size_t n) { return realloc(p, n); }
void alloc_next_free(void *p) { free(p); }
void plain_pages_changed(void) {}

#define UNIT 4096u   /* addresses are multiples of a page, in [0, SPAN) pages above BASE */
#define SPAN 4096u
#define BASE 0x100000000ull
#define MAX_LIVE 600

static struct alloc_rec *live[MAX_LIVE];
static unsigned live_count;
static unsigned long steps;
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static unsigned next_random(unsigned bound)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % bound);
}

static void fail(const char *what, uintptr_t at)
{
    printf("alloc_table: step %lu: %s (address %#lx, %u records, %zu slots, %zu holes)\n", steps, what,
           (unsigned long)at, live_count, slot_count, hole_count);
    exit(1);
}

static void forget(struct alloc_rec *r)
{
    for (unsigned i = 0; i < live_count; i++)
        if (live[i] == r) {
            live[i] = live[--live_count];
            return;
        }
    fail("removed a record the list lacks", r->base);
}

static void collect(struct alloc_rec *r, void *arg)
{
    struct alloc_rec **found = arg;
    for (unsigned i = 0; i < MAX_LIVE; i++)
        if (!found[i]) {
            found[i] = r;
            return;
        }
}

static void remove_record(struct alloc_rec *r)
{
    forget(r);
    alloc_table_remove(r);
    alloc_table_free_rec(r);
}

/* An allocation of [base, base + size): the overlapped records go first, as the cache does it. */
static void allocate(uintptr_t base, size_t size)
{
    for (;;) {
        struct alloc_rec *found[MAX_LIVE] = {0};
        alloc_table_each_overlapping(base, base + size, collect, found);
        if (!found[0])
            break;
        remove_record(found[0]);
    }
    if (live_count == MAX_LIVE || !alloc_table_add(base, size, ORIGIN_MALLOC))
        return;
    struct alloc_rec *r = alloc_table_find_base(base);
    if (!r || r->size != size)
        fail("a record just added is not found by its base", base);
    live[live_count++] = r;
}

static bool overlaps(const struct alloc_rec *r, uintptr_t lo, uintptr_t hi)
{
    return r->base < hi && lo < r->base + r->size;
}

static void check_range(uintptr_t lo, uintptr_t hi)
{
    struct alloc_rec *found[MAX_LIVE] = {0};
    alloc_table_each_overlapping(lo, hi, collect, found);
    unsigned n = 0, want = 0;
    for (; n < MAX_LIVE && found[n]; n++)
        if (!overlaps(found[n], lo, hi))
            fail("a range query gave a record outside its range", lo);
    for (unsigned i = 0; i < live_count; i++)
        want += overlaps(live[i], lo, hi);
    if (n != want)
        fail("a range query missed a record", lo);
    struct alloc_rec *reg = alloc_table_registration_overlapping(lo, hi), *want_reg = NULL;
    for (unsigned i = 0; i < live_count; i++)
        if (live[i]->state == REG_REGISTERED && live[i]->reg_lo < hi && lo < live[i]->reg_hi)
            want_reg = live[i];
    if (!reg != !want_reg || (reg && (reg->state != REG_REGISTERED || reg->reg_lo >= hi || lo >= reg->reg_hi)))
        fail("the registration query disagrees with the list", lo);
}

static void count_each(struct alloc_rec *r, void *arg)
{
    (void)r;
    ++*(unsigned *)arg;
}

static void check(void)
{
    size_t holes = 0;
    for (size_t i = 0; i < slot_count; i++) {
        holes += !slots[i].rec;
        if (i && slots[i].base <= slots[i - 1].base)
            fail("slot bases do not strictly increase", slots[i].base);
        if (slots[i].rec && slots[i].rec->base != slots[i].base)
            fail("a slot's base is not its record's", slots[i].base);
    }
    if (holes != hole_count || slot_count - holes != live_count)
        fail("the holes or the records counted are not those in the slots", 0);
    if (hole_count > 8 + live_count / 8)
        fail("holes past their bound", 0);
    unsigned visited = 0;
    alloc_table_each(count_each, &visited);
    if (visited != live_count)
        fail("alloc_table_each did not visit every record once", 0);
    for (unsigned i = 0; i < live_count; i++) {
        struct alloc_rec *r = live[i];
        if (alloc_table_find_base(r->base) != r || alloc_table_containing(r->base) != r ||
            alloc_table_containing(r->base + r->size - 1) != r)
            fail("a record is not found by its base or its bytes", r->base);
        if (!alloc_table_maybe_base(r->base))
            fail("a record's base is not watched", r->base);
        struct alloc_rec *after = alloc_table_containing(r->base + r->size);
        if (after && after->base != r->base + r->size)
            fail("the byte after a record is found in another record", r->base + r->size);
    }
    uintptr_t probe = BASE + (uintptr_t)next_random(SPAN) * UNIT + next_random(UNIT);
    struct alloc_rec *holder = NULL;
    for (unsigned i = 0; i < live_count; i++)
        if (overlaps(live[i], probe, probe + 1))
            holder = live[i];
    if (alloc_table_containing(probe) != holder || (!holder && alloc_table_find_base(probe)))
        fail("containment disagrees with the list", probe);
    uintptr_t lo = BASE + (uintptr_t)next_random(SPAN) * UNIT;
    check_range(lo, lo + (1 + next_random(64)) * UNIT);
}

static void check_filter(void)
{
    static uint16_t expected[ALLOC_EVENTS_FILTER_SLOTS];
    memset(expected, 0, sizeof expected);
    for (unsigned i = 0; i < live_count; i++)
        expected[alloc_events_slot(live[i]->base)]++;
    for (size_t slot = 0; slot < ALLOC_EVENTS_FILTER_SLOTS; slot++)
        if (alloc_events_filter[slot] != expected[slot])
            fail("a filter slot does not count the live bases hashing to it", slot);
}

int main(void)
{
    unsigned long total = 200000;
    unsigned most = 0;
    for (steps = 0; steps < total; steps++) {
        /* phases of 5000 steps that grow the table (to hundreds of records) and shrink it: an
         * allocation with odds of 70 or 30 in 100, the other ways sharing the rest as 60 in 100 */
        unsigned allocating = steps / 5000 % 2 ? 70 : 30, roll = next_random(100);
        unsigned what = roll < allocating ? 0 : 40 + (roll - allocating) * 60 / (100 - allocating);
        if (what < 40) { /* an allocation somewhere */
            allocate(BASE + (uintptr_t)next_random(SPAN) * UNIT, (1 + next_random(16)) * UNIT - next_random(2) * 16);
        } else if (what < 65 && live_count) { /* a free */
            remove_record(live[next_random(live_count)]);
        } else if (what < 85 && live_count) { /* the fresh-tensor step: freed, allocated again there */
            struct alloc_rec *r = live[next_random(live_count)];
            uintptr_t base = r->base;
            size_t size = r->size, before = slot_count;
            remove_record(r);
            allocate(base, size);
            if (slot_count > before)
                fail("an allocation at a freed record's base took a new slot", base);
        } else if (what < 90) { /* a run of frees */
            for (unsigned n = next_random(40); n && live_count; n--)
                remove_record(live[next_random(live_count)]);
        } else if (live_count) { /* a registration over a record's whole pages, or its end */
            struct alloc_rec *r = live[next_random(live_count)];
            if (r->state == REG_REGISTERED) {
                r->state = REG_NONE;
            } else if (r->size >= UNIT) {
                r->state = REG_REGISTERED;
                r->reg_lo = r->base;
                r->reg_hi = r->base + r->size / UNIT * UNIT;
            }
        }
        check();
        if (steps % 1000 == 999)
            check_filter();
        most = live_count > most ? live_count : most;
    }
    printf("alloc_table: %lu steps as the list (at most %u records)\n", total, most);
    return 0;
}
