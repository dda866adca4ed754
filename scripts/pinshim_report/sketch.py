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
All of them pickle (the report's worker processes send them back to the main one)."""
from array import array
from operator import add

EXACT_MAX = 4096
SUB_BITS = 5                     # 2**5 = 32 buckets per power of two


def bucket_of(value):
    """The bucket holding a non-negative integer (the value itself below 64)."""
    if value < 64:
        return value
    bits = value.bit_length()
    return (bits << SUB_BITS) | ((value >> (bits - SUB_BITS - 1)) & ((1 << SUB_BITS) - 1))


def bucket_range(bucket):
    """[low, high) of the values in a bucket."""
    if bucket < 64:
        return bucket, bucket + 1
    bits, sub = bucket >> SUB_BITS, bucket & ((1 << SUB_BITS) - 1)
    shift = bits - SUB_BITS - 1
    return ((1 << SUB_BITS) | sub) << shift, ((1 << SUB_BITS) | sub) + 1 << shift


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

    def _to_buckets(self):
        buckets = {}
        for value, n in self.counts.items():
            b = bucket_of(value)
            buckets[b] = buckets.get(b, 0) + n
        self.exact, self.counts = False, buckets

    def merge(self, other):
        if self.exact and other.exact and len(set(self.counts) | set(other.counts)) <= EXACT_MAX:
            for value, n in other.counts.items():
                self.counts[value] = self.counts.get(value, 0) + n
            return
        if self.exact:
            self._to_buckets()
        for value, n in other.counts.items():
            b = value if not other.exact else bucket_of(value)
            self.counts[b] = self.counts.get(b, 0) + n

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

    def _double(self):
        """Halves the resolution: bin i becomes bins 2i and 2i+1 of before."""
        half = self.nbins // 2
        zeros = array("d", bytes(8 * (self.nbins - half)))
        for values in list(self.busy.values()) + [self.starts]:
            values[:half] = array("d", map(add, values[0:2 * half:2], values[1:2 * half:2]))
            values[half:] = zeros
        self.width *= 2
        self.limit = self.nbins * self.width

    def add(self, start, duration, kind):
        end = start + duration
        while end >= self.limit:
            self._double()
        busy = self.busy_of(kind)
        width = self.width
        first, last = start // width, end // width
        self.starts[first] += 1
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
