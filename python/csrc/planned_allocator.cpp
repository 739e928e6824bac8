/*
 * planned_allocator.cpp — the planned CPU allocator of bufplan.torch: a
 * c10::Allocator registered with c10::SetCPUAllocator that serves each op's
 * allocations (outputs and workspaces) from the addresses the plan gives them.
 *
 * How: before an op runs, the runner hands this thread a queue of
 * (size, address) pairs, learned by a calibration run in the order the op
 * allocates (matched by order, not by address).  Each allocation on this
 * thread pops the next pair: the size must match, and the planned address is
 * returned with a deleter that does nothing (the arena owns the bytes).  Any
 * other allocation (no queue, a queue used up, a size that differs, another
 * thread) goes to posix_memalign with a 64-byte header holding its size, and
 * is counted: live bytes, their peak, the same rounded up to what malloc
 * really hands out (malloc_usable_size), and the bytes allocated outside the
 * arena while a queue was set.  A recording mode logs every allocation and
 * free of this thread (size, address, order) for the calibration run.
 *
 * State: the queue and the log are thread-local; the counters are atomics;
 * the registered arenas (address ranges whose bytes are never freed here) are
 * a fixed table.  The allocator, once installed, stays for the life of the
 * process (tensors it made may outlive any caller).  The C entry points below
 * are what python/bufplan/torch/allocator.py calls through ctypes.
 */
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <malloc.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace {

constexpr size_t kHeader = 64;     // keeps the data 64-byte aligned, as c10's allocator does
constexpr int kMaxArenas = 256;

struct Counters {
    std::atomic<int64_t> live{0}, peak{0}, usable_live{0}, usable_peak{0};
    std::atomic<int64_t> outside_bytes{0}, outside_allocs{0}, served{0}, mismatches{0};
};

struct Arenas {
    std::atomic<uintptr_t> lo[kMaxArenas], hi[kMaxArenas];
    std::mutex lock;   // serialises add / remove; lookups read the atomics
};

struct Queue {
    const uint64_t *sizes = nullptr, *addrs = nullptr;
    int n = 0, pos = 0;
    bool active = false;
};

struct LogEntry { int64_t kind, size, addr, seq; };   // kind 0 alloc, 1 free

struct Recorder {
    bool on = false;
    int64_t seq = 0;
    std::vector<LogEntry> log;
};

Counters &counters() { static Counters c; return c; }
Arenas &arenas() { static Arenas a; return a; }
Queue &queue() { thread_local Queue q; return q; }
Recorder &recorder() { thread_local Recorder r; return r; }

void raise_peak(std::atomic<int64_t> &peak, int64_t v)
{
    int64_t p = peak.load(std::memory_order_relaxed);
    while (v > p && !peak.compare_exchange_weak(p, v, std::memory_order_relaxed)) {}
}

bool in_arena(uintptr_t p)
{
    Arenas &a = arenas();
    for (int i = 0; i < kMaxArenas; i++) {
        uintptr_t lo = a.lo[i].load(std::memory_order_acquire);
        if (lo && p >= lo && p < a.hi[i].load(std::memory_order_acquire)) return true;
    }
    return false;
}

void record(int64_t kind, int64_t size, void *p)
{
    Recorder &r = recorder();
    if (r.on) r.log.push_back(LogEntry{kind, size, (int64_t)(uintptr_t)p, r.seq++});
}

// The deleter of planned bytes: the arena owns them (its range may already
// be unregistered when a tensor in it dies last).
void release_planned(void *data) { record(1, 0, data); }

// The deleter of heap bytes, and the raw deleter: planned bytes (inside a
// registered arena) are left alone, the others were posix_memalign'ed with
// their size in the header.
void release(void *data)
{
    if (!data) return;
    if (in_arena((uintptr_t)data)) { record(1, 0, data); return; }
    char *base = static_cast<char *>(data) - kHeader;
    int64_t n;
    std::memcpy(&n, base, sizeof n);
    record(1, n, data);
    Counters &c = counters();
    c.live.fetch_sub(n, std::memory_order_relaxed);
    c.usable_live.fetch_sub((int64_t)malloc_usable_size(base), std::memory_order_relaxed);
    std::free(base);
}

void *outside_alloc(size_t n)
{
    void *base = nullptr;
    if (posix_memalign(&base, kHeader, n + kHeader) != 0) return nullptr;
    int64_t sz = (int64_t)n;
    std::memcpy(base, &sz, sizeof sz);
    Counters &c = counters();
    raise_peak(c.peak, c.live.fetch_add(sz, std::memory_order_relaxed) + sz);
    int64_t u = (int64_t)malloc_usable_size(base);
    raise_peak(c.usable_peak, c.usable_live.fetch_add(u, std::memory_order_relaxed) + u);
    return static_cast<char *>(base) + kHeader;
}

struct PlannedAllocator final : c10::Allocator {
    c10::DataPtr allocate(size_t n) const override
    {
        Queue &q = queue();
        void *p = nullptr;
        c10::DeleterFnPtr del = &release;
        if (q.active && q.pos < q.n && q.sizes[q.pos] == (uint64_t)n && q.addrs[q.pos] != 0) {
            p = reinterpret_cast<void *>((uintptr_t)q.addrs[q.pos]);
            q.pos++;
            del = &release_planned;
            counters().served.fetch_add(1, std::memory_order_relaxed);
        } else {
            if (q.active) {
                Counters &c = counters();
                c.outside_bytes.fetch_add((int64_t)n, std::memory_order_relaxed);
                c.outside_allocs.fetch_add(1, std::memory_order_relaxed);
                if (q.pos < q.n) {
                    if (q.sizes[q.pos] != (uint64_t)n) c.mismatches.fetch_add(1, std::memory_order_relaxed);
                    q.pos++;   // an entry planned for the bytes of the heap keeps the order
                }
            }
            p = outside_alloc(n);
            if (!p) throw std::bad_alloc();
        }
        record(0, (int64_t)n, p);
        return {p, p, del, c10::Device(c10::DeviceType::CPU)};
    }
    c10::DeleterFnPtr raw_deleter() const override { return &release; }
};

PlannedAllocator &instance() { static PlannedAllocator a; return a; }

}  // namespace

extern "C" {

/* Registers the allocator as the CPU allocator (once; later calls do nothing). */
int bpt_install(void)
{
    static std::once_flag once;
    std::call_once(once, [] { c10::SetCPUAllocator(&instance(), /*priority=*/100); });
    return c10::GetCPUAllocator() == &instance() ? 0 : -1;
}

/* Bytes in [lo, hi) belong to a caller's arena: never freed here.  -1 when the table is full. */
int bpt_arena_add(uint64_t lo, uint64_t hi)
{
    Arenas &a = arenas();
    std::lock_guard<std::mutex> g(a.lock);
    for (int i = 0; i < kMaxArenas; i++)
        if (!a.lo[i].load()) { a.hi[i].store(hi); a.lo[i].store(lo, std::memory_order_release); return 0; }
    return -1;
}

void bpt_arena_remove(uint64_t lo)
{
    Arenas &a = arenas();
    std::lock_guard<std::mutex> g(a.lock);
    for (int i = 0; i < kMaxArenas; i++)
        if (a.lo[i].load() == lo) { a.lo[i].store(0, std::memory_order_release); a.hi[i].store(0); }
}

/* The next n allocations of this thread: sizes[i] bytes at addrs[i] (0 = from
 * the heap, counted outside).  The arrays must stay valid until bpt_done(). */
void bpt_expect(const uint64_t *sizes, const uint64_t *addrs, int n)
{
    Queue &q = queue();
    q.sizes = sizes; q.addrs = addrs; q.n = n; q.pos = 0; q.active = true;
}

/* Ends the queue; returns how many entries were used (n when the op did what the calibration saw). */
int bpt_done(void)
{
    Queue &q = queue();
    int used = q.pos;
    q = Queue();
    return used;
}

/* Recording of this thread's allocations and frees for a calibration run. */
void bpt_record(int on)
{
    Recorder &r = recorder();
    r.on = on != 0;
    if (on) { r.log.clear(); r.seq = 0; }
}

/* Moves up to cap log entries (kind, size, addr, seq: 4 int64 each), the
 * oldest first, out of the log; returns the count. */
int64_t bpt_log(int64_t *out, int64_t cap)
{
    Recorder &r = recorder();
    int64_t n = (int64_t)r.log.size() < cap ? (int64_t)r.log.size() : cap;
    for (int64_t i = 0; i < n; i++) {
        out[4 * i] = r.log[i].kind; out[4 * i + 1] = r.log[i].size;
        out[4 * i + 2] = r.log[i].addr; out[4 * i + 3] = r.log[i].seq;
    }
    r.log.erase(r.log.begin(), r.log.begin() + n);
    return n;
}

/* Counters: live, peak, usable_live, usable_peak, outside_bytes,
 * outside_allocs, served, mismatches. */
void bpt_stats(int64_t out[8])
{
    Counters &c = counters();
    out[0] = c.live.load(); out[1] = c.peak.load(); out[2] = c.usable_live.load(); out[3] = c.usable_peak.load();
    out[4] = c.outside_bytes.load(); out[5] = c.outside_allocs.load(); out[6] = c.served.load();
    out[7] = c.mismatches.load();
}

/* The peaks back to the live bytes now (measure the peak of what follows). */
void bpt_reset_peak(void)
{
    Counters &c = counters();
    c.peak.store(c.live.load());
    c.usable_peak.store(c.usable_live.load());
}

}  // extern "C"
