// Word storage for bit arrays: 64-bit words, 64-byte aligned, either owned
// (allocated here) or borrowed (memory someone else owns, e.g. a mapped
// file, kept alive by an opaque handle).
//
// Why aligned: a blocked layout touches one 64-byte block per key, and a
// block that straddled two cache lines would cost two misses. Why huge
// pages: a random access into an array of many MB misses the TLB as well
// as the cache; with 2 MiB pages the page walk mostly hits (measured on
// this machine: ~22 -> ~13 ns per random access at 1 GB). Arrays of at
// least kHugePageThreshold bytes are therefore aligned to 2 MiB and
// advised MADV_HUGEPAGE (Linux only) before their pages are first touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(_WIN32)
#include <malloc.h>
#endif

namespace bloomkit {

// Who may write the words, and how (mapped_file.hpp):
//   Private   memory only this process writes (owned, or borrowed privately)
//   ReadOnly  a read-only mapping: any write must be refused before it
//             happens (it would be a SIGSEGV)
//   Shared    a writable mapping other processes may write at the same
//             time: every write must be an atomic OR (layouts.hpp, AtomicOr)
enum class StorageAccess { Private, ReadOnly, Shared };

// Serialises the writers of Shared storage, when the owner of the mapping
// asks for exact test-and-set answers (writer_lock.hpp): atomic ORs alone
// lose no bit, but two processes adding one key can each set a different
// one of its k bits and both be told it is new. BloomFilter holds it around
// each test-and-set (one key, or one chunk of a batch); never while Python
// code runs, so a holder never waits for the GIL.
class WriterLock {
  public:
    virtual ~WriterLock() = default;
    virtual void lock() = 0;
    virtual void unlock() = 0;
};

// A write to read-only storage (Python: io.UnsupportedOperation), and any
// use of a filter whose mapping was closed (Python: ValueError).
class ReadOnlyError : public std::logic_error {
  public:
    using std::logic_error::logic_error;
};
class ClosedError : public std::logic_error {
  public:
    using std::logic_error::logic_error;
};

constexpr size_t kCacheLine = 64;
constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kHugePageThreshold = size_t(4) << 20;

namespace detail {

inline void* aligned_allocate(size_t bytes, size_t alignment) {
    if (bytes == 0) bytes = alignment;
#if defined(_WIN32)
    void* p = _aligned_malloc(bytes, alignment);
#else
    void* p = nullptr;
    if (posix_memalign(&p, alignment, bytes) != 0) p = nullptr;
#endif
    if (p == nullptr) throw std::bad_alloc();
    return p;
}

inline void aligned_free(void* p) {
#if defined(_WIN32)
    _aligned_free(p);
#else
    std::free(p);
#endif
}

#if defined(__linux__) && defined(MADV_HUGEPAGE)
// `bytes` (a multiple of kHugePage) in a mapping of their own, 2 MiB
// aligned, advised MADV_HUGEPAGE before any page is touched. Not from
// malloc: after a large block is freed, glibc raises its mmap threshold
// (up to 32 MiB) and serves the next large request from pages the heap
// already touched as 4 KiB pages, which the advice no longer changes. A
// binary fuse filter built after a few others got no huge page that way and
// its 3-line lookups ran 13.6 ns/key, 10.9 in a mapping of its own (1e7
// keys, thread CPU time, epyc2).
inline void* map_huge_pages(size_t bytes) {
    const size_t span = bytes + kHugePage;
    void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
    if (aligned > start) munmap(raw, aligned - start);
    const uintptr_t end = start + span;
    if (end > aligned + bytes) munmap(reinterpret_cast<void*>(aligned + bytes), end - (aligned + bytes));
    void* p = reinterpret_cast<void*>(aligned);
    (void)madvise(p, bytes, MADV_HUGEPAGE);  // advice only: no THP changes nothing
    return p;
}
#endif

// Frees owned words: munmap for a map_huge_pages block (mapped_bytes != 0).
struct AlignedFree {
    size_t mapped_bytes = 0;
    void operator()(uint64_t* p) const {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (mapped_bytes != 0) {
            munmap(p, mapped_bytes);
            return;
        }
#endif
        aligned_free(p);
    }
};

}  // namespace detail

class WordStorage {
  public:
    WordStorage() = default;

    // `num_words` zeroed words, owned.
    explicit WordStorage(uint64_t num_words) : size_(num_words) {
        if (num_words > (uint64_t(1) << 60)) throw std::bad_alloc();
        const size_t bytes = static_cast<size_t>(num_words * sizeof(uint64_t));
        const size_t alignment = bytes >= kHugePageThreshold ? kHugePage : kCacheLine;
        // Round up to the alignment so the whole allocation is made of
        // whole lines (or huge pages).
        const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (bytes >= kHugePageThreshold)
            owned_ = std::unique_ptr<uint64_t, detail::AlignedFree>(
                static_cast<uint64_t*>(detail::map_huge_pages(rounded)), detail::AlignedFree{rounded});
        else
#endif
            owned_.reset(static_cast<uint64_t*>(detail::aligned_allocate(rounded, alignment)));
        // Zeroed (a fresh mapping already is: this faults its pages in now,
        // as for a malloc'd block, not in the first batch).
        std::memset(owned_.get(), 0, rounded);
        data_ = owned_.get();
    }

    // A view of `num_words` words at `words` that this object does not own;
    // `keep_alive` (may be null) is held for as long as the view exists;
    // `writer_lock` (Shared storage only, may be null) is owned by it.
    static WordStorage borrow(uint64_t* words, uint64_t num_words, std::shared_ptr<void> keep_alive,
                              StorageAccess access = StorageAccess::Private, WriterLock* writer_lock = nullptr) {
        WordStorage s;
        s.data_ = words;
        s.size_ = num_words;
        s.keep_alive_ = std::move(keep_alive);
        s.access_ = access;
        s.writer_lock_ = access == StorageAccess::Shared ? writer_lock : nullptr;
        return s;
    }

    // Copies are always owned and private (a copy of a mapped filter is an
    // ordinary one).
    WordStorage(const WordStorage& other) : WordStorage(other.size_) {
        if (size_ != 0) std::memcpy(data_, other.data_, static_cast<size_t>(size_ * sizeof(uint64_t)));
    }
    WordStorage& operator=(const WordStorage& other) {
        if (this != &other) *this = WordStorage(other);
        return *this;
    }
    WordStorage(WordStorage&& other) noexcept { swap(other); }
    WordStorage& operator=(WordStorage&& other) noexcept {
        WordStorage(std::move(other)).swap(*this);
        return *this;
    }

    uint64_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const uint64_t& back() const { return data_[size_ - 1]; }
    uint64_t* data() { return data_; }
    const uint64_t* data() const { return data_; }
    bool owned() const { return data_ == nullptr || owned_ != nullptr; }
    StorageAccess access() const { return access_; }
    WriterLock* writer_lock() const { return writer_lock_; }
    uint64_t* begin() { return data_; }
    uint64_t* end() { return data_ + size_; }
    const uint64_t* begin() const { return data_; }
    const uint64_t* end() const { return data_ + size_; }
    uint64_t& operator[](uint64_t i) { return data_[i]; }
    const uint64_t& operator[](uint64_t i) const { return data_[i]; }

    bool operator==(const WordStorage& other) const {
        return size_ == other.size_ &&
               (size_ == 0 || std::memcmp(data_, other.data_, static_cast<size_t>(size_ * sizeof(uint64_t))) == 0);
    }

  private:
    void swap(WordStorage& other) noexcept {
        std::swap(data_, other.data_);
        std::swap(size_, other.size_);
        std::swap(owned_, other.owned_);
        std::swap(keep_alive_, other.keep_alive_);
        std::swap(access_, other.access_);
        std::swap(writer_lock_, other.writer_lock_);
    }

    uint64_t* data_ = nullptr;
    uint64_t size_ = 0;
    std::unique_ptr<uint64_t, detail::AlignedFree> owned_;
    std::shared_ptr<void> keep_alive_;
    StorageAccess access_ = StorageAccess::Private;
    WriterLock* writer_lock_ = nullptr;  // kept alive by keep_alive_
};

}  // namespace bloomkit
