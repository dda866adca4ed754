"""sketch.py: bounded summaries of many numbers, mergeable across files and processes.

Contract:
- Dist: the distribution of non-negative integers. Exact (a count per distinct value) while it
  has at most EXACT_MAX distinct values; past that, counts per logarithmic bucket, 32 buckets per
  power of two, so a median or percentile read from it is within 1.6 % of the true one (values
  below 64 stay exact). Memory: at most a few thousand entries, whatever the number of values.
  Count, sum, min, max and the standard deviation are kept by the caller, exactly (integer sums
  and sums of squares: Python integers do not overflow).
- Lane: a timeline row: copy time and copy starts in `nbins` bins of equal width over a time
  range that doubles (neighbouring bins merged) whenever a copy ends past it. Memory: nbins
  numbers per host memory kind seen, whatever the run's length or its number of copies.
All of them pickle (the report's worker processes send them back to the main one). Adding many
values at once (Dist.add_many, add_count) gives what adding them one by one gives, in any order."""
from array import array
from collections import _count_elements as count_into     # Counter's counting loop: C in CPython
from itertools import compress, repeat
from operator import add, and_, eq, lshift, not_, or_, rshift, sub

EXACT_MAX = 4096
SUB_BITS = 5                     # 2**5 = 32 buckets per power of two


def bucket_of(value):
    """The bucket holding a non-negative integer (the value itself below 64)."""
    if value < 64:
        return value
    bits = value.bit_length()
    return (bits << SUB_BITS) | ((value >> (bits - SUB_BITS - 1)) & ((1 << SUB_BITS) - 1))


def buckets_of(values):
    """[bucket_of(v) for v in values], a step at a time over all the values (the built-ins' loops)."""
    if not values or min(values) < 64:
        return list(map(bucket_of, values))
    bits = list(map(int.bit_length, values))
    subs = map(and_, map(rshift, values, map(sub, bits, repeat(SUB_BITS + 1))), repeat((1 << SUB_BITS) - 1))
    return list(map(or_, map(lshift, bits, repeat(SUB_BITS)), subs))


def bucket_range(bucket):
    """[low, high) of the values in a bucket."""
    if bucket < 64:
        return bucket, bucket + 1
    bits, sub = bucket >> SUB_BITS, bucket & ((1 << SUB_BITS) - 1)
    shift = bits - SUB_BITS - 1
    return ((1 << SUB_BITS) | sub) << shift, ((1 << SUB_BITS) | sub) + 1 << shift


def _add_counts(counts, keys, ns):
    """counts[key] += n for each key and n: the keys counted once by the built-ins (mostly all of
    them for times, which seldom repeat), the others one by one."""
    keys, ns = list(keys), list(ns)
    once = list(map(eq, ns, repeat(1)))
    count_into(counts, compress(keys, once))
    for key, n in compress(zip(keys, ns), map(not_, once)):
        counts[key] = counts.get(key, 0) + n


class Dist:
    """Counts of values, exact while few distinct values (see the module's contract)."""
    __slots__ = ("exact", "counts")

    def __init__(self):
        self.exact = True
        self.counts = {}

    def __getstate__(self):
        return self.exact, self.counts

    def __setstate__(self, state):
        self.exact, self.counts = state

    def copy(self):
        c = Dist()
        c.exact, c.counts = self.exact, dict(self.counts)
        return c

    def add(self, value):
        counts = self.counts
        if not self.exact and value >= 64:          # bucket_of, inlined: this is the hot path
            bits = value.bit_length()
            value = (bits << SUB_BITS) | ((value >> (bits - SUB_BITS - 1)) & ((1 << SUB_BITS) - 1))
        n = counts.get(value)
        if n is not None:
            counts[value] = n + 1
        elif self.exact and len(counts) >= EXACT_MAX:
            self._to_buckets()
            self.add(value)
        else:
            counts[value] = 1

    def add_count(self, value, n):
        """add(value), n times."""
        counts = self.counts
        if not self.exact:
            value = bucket_of(value)
        elif value not in counts and len(counts) >= EXACT_MAX:
            self._to_buckets()
            value = bucket_of(value)
        counts[value] = counts.get(value, 0) + n

    def add_many(self, values):
        """add(v) for each v of a list, with the counting done by the built-ins."""
        if self.exact:
            count_into(self.counts, values)
            if len(self.counts) > EXACT_MAX:
                self._to_buckets()
        else:
            count_into(self.counts, buckets_of(values))

    def _to_buckets(self):
        buckets = {}
        _add_counts(buckets, buckets_of(list(self.counts)), self.counts.values())
        self.exact, self.counts = False, buckets

    def merge(self, other):
        counts = self.counts
        if self.exact and other.exact and (len(counts) + len(other.counts) <= EXACT_MAX
                                           or len(counts.keys() | other.counts.keys()) <= EXACT_MAX):
            _add_counts(counts, other.counts.keys(), other.counts.values())
            return
        if self.exact:
            self._to_buckets()
            counts = self.counts
        keys = buckets_of(list(other.counts)) if other.exact else other.counts.keys()
        _add_counts(counts, keys, other.counts.values())

    def count(self):
        return sum(self.counts.values())

    def _value_at(self, rank):
        """The value of the rank-th smallest (0-based): exact, or its bucket's middle."""
        seen = 0
        for key in sorted(self.counts):
            seen += self.counts[key]
            if seen > rank:
                if self.exact:
                    return key
                low, high = bucket_range(key)
                return low if high - low == 1 else (low + high - 1) / 2
        raise ValueError("rank past the end")

    def median(self):
        """As statistics.median: the middle value, or the mean of the two middle ones."""
        n = self.count()
        if n == 0:
            return None
        if n % 2:
            return self._value_at(n // 2)
        return (self._value_at(n // 2 - 1) + self._value_at(n // 2)) / 2

    def percentile(self, p):
        """The value below which p percent of the values lie (nearest rank)."""
        n = self.count()
        if n == 0:
            return None
        rank = min(n - 1, max(0, -(-n * p // 100) - 1))
        return self._value_at(int(rank))


class Lane:
    """One timeline row (see the module's contract). Times in ns from the process's start. The
    arrays are changed in place (never replaced), so a caller may keep references to them."""
    __slots__ = ("nbins", "width", "limit", "busy", "starts")

    def __init__(self, nbins):
        self.nbins = nbins
        self.width = 1 << 14          # ns per bin; doubles as the run gets longer
        self.limit = nbins * self.width
        self.busy = {}                # kind -> array of ns busy per bin
        self.starts = array("d", bytes(8 * nbins))   # copies that started in each bin

    def __getstate__(self):
        return self.nbins, self.width, self.busy, self.starts

    def __setstate__(self, state):
        self.nbins, self.width, self.busy, self.starts = state
        self.limit = self.nbins * self.width

    @property
    def copies(self):
        return int(sum(self.starts))

    @property
    def total_busy(self):
        return sum(sum(values) for values in self.busy.values())

    def busy_of(self, kind):
        """The busy array of a host kind (created empty if new)."""
        values = self.busy.get(kind)
        if values is None:
            values = self.busy[kind] = array("d", bytes(8 * self.nbins))
        return values

    def _double(self, times=1):
        """Halves the resolution, `times` times: bin i becomes bins 2i and 2i+1 of before (at
        once: bin i becomes bins i * 2**times to (i + 1) * 2**times - 1)."""
        group = 1 << times
        kept = max(1, self.nbins // group)
        zeros = array("d", bytes(8 * (self.nbins - kept)))
        for values in list(self.busy.values()) + [self.starts]:
            if group == 2:
                values[:kept] = array("d", map(add, values[0:2 * kept:2], values[1:2 * kept:2]))
            elif kept == 1:
                values[:1] = array("d", [sum(values)])
            else:
                values[:kept] = array("d", map(sum, zip(*[iter(values)] * group)))
            values[kept:] = zeros
        self.width <<= times
        self.limit = self.nbins * self.width

    def grow(self, end):
        """Widens the bins until a copy ending at `end` fits."""
        times = 0
        while end >= self.limit << times:
            times += 1
        if times:
            self._double(times)

    def add(self, start, duration, kind):
        self.grow(start + duration)
        self.starts[start // self.width] += 1
        self.spread(start, duration, kind)

    def spread(self, start, duration, kind):
        """The busy time of a copy that fits (grow), bin by bin; its start is not counted."""
        busy = self.busy_of(kind)
        width = self.width
        end = start + duration
        first, last = start // width, end // width
        if first == last:
            busy[first] += duration
            return
        busy[first] += (first + 1) * width - start
        for i in range(first + 1, last):
            busy[i] += width
        busy[last] += end - last * width

    def shrink(self):
        """Halves the memory: half as many bins, each twice as wide."""
        self._double()
        half = self.nbins // 2
        for values in list(self.busy.values()) + [self.starts]:
            del values[half:]
        self.nbins = half
        self.limit = self.nbins * self.width

    def end(self):
        """The end of the last bin with a copy in it (ns from the process start), 0 if none."""
        for i in range(self.nbins - 1, -1, -1):
            if self.starts[i] or any(values[i] for values in self.busy.values()):
                return (i + 1) * self.width
        return 0

    def memory(self):
        return self.nbins * 8 * (1 + len(self.busy))
