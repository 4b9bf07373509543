// FileWriterLock: the WriterLock (storage.hpp) of a file mapped "r+", which
// makes test-and-set answers exact across processes and threads.
//
// Why a lock: every word is written with an atomic OR, so no bit is lost,
// but a key's k bits are k separate ORs. Two processes adding one new key at
// once can each flip a different one of its bits first, and each then sees
// that it changed something: both are told "new". Exactness needs the
// writers of one key serialised; the whole test-and-set of a key (or of a
// chunk of a batch) runs under this lock.
//
// What it is: an exclusive open-file-description lock (F_OFD_SETLKW, Linux)
// on one byte at kLockOffset, far beyond any filter file's end (docs/
// FORMAT.md), on a descriptor of the file this object owns; plus a mutex,
// since threads of one process share that descriptor and OFD locks do not
// exclude them. The kernel drops the lock when its holder dies (SIGKILL
// included), so a killed writer never blocks the others. Where OFD locks do
// not exist, a classic fcntl record lock on the same byte.
//
// fork: a child inherits the descriptor and with it the parent's open file
// description, so the parent's lock would not exclude the child. A
// pthread_atfork child handler gives every live lock of the child a new
// description of the same file (/proc/self/fd) and a new mutex (another
// thread of the parent may have held the old one at fork).
#pragma once

#include <cerrno>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <system_error>

#include "storage.hpp"

#if !defined(_WIN32)
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <unistd.h>

#include <new>

namespace bloomkit {

class FileWriterLock final : public WriterLock {
  public:
    // The byte locked: 2**62, beyond the end of any filter file, so the
    // lock never overlaps a byte range another tool locks in the data.
    static constexpr off_t kLockOffset = off_t(1) << 62;

    // Locks the file open at `fd` (the caller's; a duplicate is kept).
    FileWriterLock(int fd, std::string path) : path_(std::move(path)) {
        fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "cannot lock " + path_);
        std::lock_guard<std::mutex> registered(registry_mutex());
        register_fork_handler();
        registry().insert(this);
    }
    FileWriterLock(const FileWriterLock&) = delete;
    FileWriterLock& operator=(const FileWriterLock&) = delete;

    ~FileWriterLock() override {
        {
            std::lock_guard<std::mutex> registered(registry_mutex());
            registry().erase(this);
        }
        if (fd_ >= 0) ::close(fd_);
    }

    void lock() override {
        threads_.lock();
        if (fd_ < 0) {
            threads_.unlock();
            throw std::system_error(reopen_errno_, std::generic_category(),
                                    "cannot lock " + path_ + " for writing after fork; open it again in this process");
        }
        if (!set(true)) {
            const int error = errno;
            threads_.unlock();
            throw std::system_error(error, std::generic_category(), "cannot lock " + path_ + " for writing");
        }
    }

    void unlock() override {
        (void)set(false);  // cannot fail for a lock this description holds
        threads_.unlock();
    }

  private:
    bool set(bool exclusive) {
#if defined(F_OFD_SETLKW)
        const int command = F_OFD_SETLKW;
#else
        // A classic (per-process) record lock on the same byte: not flock(),
        // which would wait for the shared flock() every mapping holds
        // (mapped_file.hpp). It is dropped when this process closes any
        // descriptor of the file, a weaker hold than an OFD lock's.
        const int command = F_SETLKW;
#endif
        struct flock range {};
        range.l_type = exclusive ? F_WRLCK : F_UNLCK;
        range.l_whence = SEEK_SET;
        range.l_start = kLockOffset;
        range.l_len = 1;
        for (;;) {
            if (::fcntl(fd_, command, &range) == 0) return true;
            if (errno != EINTR) return false;
        }
    }

    // In the child after fork (one thread, async-signal-safe calls only).
    void reopen_in_child() {
        new (&threads_) std::mutex();
        char self[40];
        std::snprintf(self, sizeof self, "/proc/self/fd/%d", fd_);
        const int fresh = ::open(self, O_RDWR | O_CLOEXEC);
        if (fresh < 0) reopen_errno_ = errno;
        ::close(fd_);
        fd_ = fresh;
    }

    static std::mutex& registry_mutex() {
        static std::mutex* m = new std::mutex();  // never destroyed: used by fork handlers at exit
        return *m;
    }
    static std::set<FileWriterLock*>& registry() {
        static std::set<FileWriterLock*>* locks = new std::set<FileWriterLock*>();
        return *locks;
    }
    // Called with registry_mutex held. The prepare handler takes the
    // registry mutex so the child sees a consistent set of locks.
    static void register_fork_handler() {
        static bool registered = false;
        if (registered) return;
        registered = true;
        ::pthread_atfork([] { registry_mutex().lock(); }, [] { registry_mutex().unlock(); },
                         [] {
                             for (FileWriterLock* lock : registry()) lock->reopen_in_child();
                             new (&registry_mutex()) std::mutex();
                         });
    }

    std::string path_;
    int fd_ = -1;
    int reopen_errno_ = 0;
    std::mutex threads_;
};

}  // namespace bloomkit
#endif
