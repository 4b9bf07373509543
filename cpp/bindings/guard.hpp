// Thread safety for one filter object shared between Python threads.
//
// Batch operations run with the GIL released, so two threads could otherwise
// touch the same filter at once. Every section that runs without the GIL
// registers itself in `in_flight` (changed only while holding the GIL) and
// takes the filter's shared_mutex. A call made with the GIL held that finds
// in_flight == 0 knows no other thread is inside this filter and none can
// enter while it holds the GIL, so single-key calls stay lock-free in the
// common case; otherwise it releases the GIL and queues on the mutex too.
//
// Free-threaded CPython (Py_GIL_DISABLED): there is no GIL to make
// "in_flight == 0" mean anything, since two threads may enter the same
// method truly at once. There every short call takes the mutex too: first
// try_lock while attached to the interpreter (uncontended, one atomic
// operation), else detached (PyEval_SaveThread) before blocking, so a thread
// waiting for the filter never holds up a stop-the-world pause that the
// lock's owner may be waiting for.
#pragma once

#include <pybind11/pybind11.h>

#include <bloomkit/keys.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#if defined(__GLIBCXX__)
#include <cxxabi.h>  // abi::__forced_unwind
#endif
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace bloomkit_py {

namespace py = pybind11;

// A counter that the GIL protects on a GIL build; atomic where there is none.
#if defined(Py_GIL_DISABLED)
using GilCounter = std::atomic<uint32_t>;
using InFlightCount = std::atomic<int>;
#else
using GilCounter = uint32_t;
using InFlightCount = int;
#endif

class AccessGuard {
  public:
    AccessGuard() = default;
    AccessGuard(const AccessGuard&) = delete;
    AccessGuard& operator=(const AccessGuard&) = delete;

    // Runs f() with the GIL released and exclusive (write) or shared (read)
    // access to the filter.
    template <class F>
    auto released_write(F&& f) {
        return released<std::unique_lock<std::shared_mutex>>(std::forward<F>(f));
    }
    template <class F>
    auto released_read(F&& f) {
        return released<std::shared_lock<std::shared_mutex>>(std::forward<F>(f));
    }

    // Runs f() for a short operation: directly under the GIL when nobody is
    // inside the filter, else like released_*.
    template <class F>
    auto write(F&& f) {
#if defined(Py_GIL_DISABLED)
        std::unique_lock<std::shared_mutex> lock(mutex_, std::try_to_lock);
        if (lock.owns_lock()) return f();
#else
        if (in_flight_ == 0) return f();
#endif
        return released_write(std::forward<F>(f));
    }
    template <class F>
    auto read(F&& f) {
#if defined(Py_GIL_DISABLED)
        std::shared_lock<std::shared_mutex> lock(mutex_, std::try_to_lock);
        if (lock.owns_lock()) return f();
#else
        if (in_flight_ == 0) return f();
#endif
        return released_read(std::forward<F>(f));
    }

    bool idle() const { return in_flight_ == 0; }

    // Runs f() holding first's lock (FirstLock) and second's shared lock if
    // both are free right now, without waiting; returns false (f not run)
    // otherwise. Free-threaded builds only: with a GIL, idle() decides.
    template <class FirstLock, class F>
    static bool try_pair(AccessGuard& first, AccessGuard& second, F& f) {
        FirstLock first_lock(first.mutex_, std::try_to_lock);
        if (!first_lock.owns_lock()) return false;
        std::shared_lock<std::shared_mutex> second_lock(second.mutex_, std::try_to_lock);
        if (!second_lock.owns_lock()) return false;
        f();
        return true;
    }

    template <class FirstLock, class F>
    static auto released_pair(AccessGuard& first, AccessGuard& second, F&& f) {
        InFlight first_registration(first.in_flight_);
        InFlight second_registration(second.in_flight_);
        return without_gil([&] {
            FirstLock first_lock(first.mutex_, std::defer_lock);
            std::shared_lock<std::shared_mutex> second_lock(second.mutex_, std::defer_lock);
            std::lock(first_lock, second_lock);
            return f();
        });
    }

    // Runs f() (which must not touch any Python object) with the GIL
    // released. The GIL is re-acquired in straight-line code, not in a
    // destructor as py::gil_scoped_release does: at interpreter exit a daemon
    // thread re-acquiring the GIL is ended by PyEval_RestoreThread with
    // pthread_exit, whose forced unwinding through a noexcept destructor calls
    // std::terminate (exit status 134 instead of 0). f() itself may take the
    // GIL back (a list's keys are read a block at a time: keys.cpp,
    // object_keys) and be ended there the same way. Either forced unwinding
    // stops here (park_exiting_thread): f()'s own frames (its lock, its
    // helper thread) are unwound by then, the caller's hold Python objects.
    template <class F>
    static auto without_gil(F&& f) -> decltype(f()) {
        using Result = decltype(f());
        PyThreadState* state = PyEval_SaveThread();
        std::exception_ptr error;
        if constexpr (std::is_void<Result>::value) {
            try {
                f();
            }
#if defined(__GLIBCXX__)
            catch (abi::__forced_unwind&) {
                park_exiting_thread();
            }
#endif
            catch (...) {
                error = std::current_exception();
            }
            restore_thread(state);
            if (error) std::rethrow_exception(error);
        } else {
            std::optional<Result> result;
            try {
                result.emplace(f());
            }
#if defined(__GLIBCXX__)
            catch (abi::__forced_unwind&) {
                park_exiting_thread();
            }
#endif
            catch (...) {
                error = std::current_exception();
            }
            restore_thread(state);
            if (error) std::rethrow_exception(error);
            return std::move(*result);
        }
    }

  private:
    // A daemon thread that CPython 3.8-3.13 ends with pthread_exit at
    // interpreter exit (3.14 parks it inside PyEval_RestoreThread itself)
    // must not unwind on into its caller's frames: their destructors would
    // drop Python references with no thread state and without the GIL. On
    // 3.12, whose object allocator is found through the thread state, the
    // first object freed that way is a segfault at exit (a batch's result
    // array: status 139). The thread sleeps instead, holding no lock, until
    // the exiting process ends it; its references are never dropped.
    [[noreturn]] static void park_exiting_thread() {
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    }

    // PyEval_RestoreThread, whose pthread_exit at interpreter exit parks the
    // thread instead of unwinding (park_exiting_thread).
    static void restore_thread(PyThreadState* state) {
#if defined(__GLIBCXX__)
        try {
            PyEval_RestoreThread(state);
        } catch (abi::__forced_unwind&) {
            park_exiting_thread();
        }
#else
        PyEval_RestoreThread(state);
#endif
    }

    // Registration of a section running without the GIL. Declared before the
    // GIL release so it is destroyed after the GIL is re-acquired, also when
    // the section throws.
    struct InFlight {
        InFlightCount& counter;
        explicit InFlight(InFlightCount& c) : counter(c) { ++counter; }
        ~InFlight() { --counter; }
    };

    template <class Lock, class F>
    auto released(F&& f) {
        InFlight registration(in_flight_);
        return without_gil([&] {
            Lock lock(mutex_);
            return f();
        });
    }

    std::shared_mutex mutex_;
    InFlightCount in_flight_{0};
};

// Runs f() with access to two filters, for unions, comparisons and
// estimates: `first` is written when FirstLock is a unique_lock, `second` is
// only read. The GIL stays held when both are idle (the common case);
// otherwise both mutexes are taken together with std::lock, which cannot
// deadlock against another pair operation.
template <class FirstLock, class F>
auto with_pair(AccessGuard& first, AccessGuard& second, F&& f) {
    if (&first == &second) {
        if (std::is_same<FirstLock, std::unique_lock<std::shared_mutex>>::value) return first.write(std::forward<F>(f));
        return first.read(std::forward<F>(f));
    }
#if defined(Py_GIL_DISABLED)
    using Result = decltype(f());
    if constexpr (std::is_void<Result>::value) {
        if (AccessGuard::try_pair<FirstLock>(first, second, f)) return;
    } else {
        std::optional<Result> result;
        auto store = [&] { result.emplace(f()); };
        if (AccessGuard::try_pair<FirstLock>(first, second, store)) return std::move(*result);
    }
#else
    if (first.idle() && second.idle()) return f();
#endif
    return AccessGuard::released_pair<FirstLock>(first, second, std::forward<F>(f));
}

template <class F>
auto read_pair(AccessGuard& a, AccessGuard& b, F&& f) {
    return with_pair<std::shared_lock<std::shared_mutex>>(a, b, std::forward<F>(f));
}
template <class F>
auto write_first_read_second(AccessGuard& a, AccessGuard& b, F&& f) {
    return with_pair<std::unique_lock<std::shared_mutex>>(a, b, std::forward<F>(f));
}

// Cores whose writers move stored data around, so that their arrays read
// outside the filter's lock can be torn (cuckoo: an insert's kick chain has
// one fingerprint in no bucket mid-walk), offer hand_off_arrays(retired):
// fresh copies for the core, the originals (same addresses) to `retired`.
// Views of such a core's arrays (protocol 5 pickle buffers: common.hpp,
// _frame_parts) are copy-on-write: the first write while any view lives
// hands the arrays off to the views, which keep reading the snapshot the
// frame's checksum was computed over; with no view alive nothing is copied.
template <class Core, class = void>
struct HandsOffArrays : std::false_type {};
template <class Core>
struct HandsOffArrays<Core, std::void_t<decltype(std::declval<Core&>().hand_off_arrays(
                                std::declval<std::vector<std::vector<uint8_t>>&>()))>> : std::true_type {};

// What the views taken since a filter's last write share: for a
// copy-on-write core, the arrays handed off to them once it is written.
struct ViewedArrays {
    std::vector<std::vector<uint8_t>> retired;
};

// A core filter plus the guard protecting it: the object the bindings expose.
// `hashing` is how its keys are hashed (MurmurHash3 under the core's seed,
// or SipHash for a keyed filter: keys.hpp, KeyHashing); the cores only ever
// see digests, so the secret key lives here and nowhere in the core.
template <class Core>
struct Guarded {
    template <class... Args>
    explicit Guarded(Args&&... args) : core(std::forward<Args>(args)...), hashing(core.seed()) {}
    Core core;
    AccessGuard guard;
    bloomkit::KeyHashing hashing;
    // Makes this filter keyed with the 128-bit master key `secret`.
    void set_secret(const bloomkit::SipKey& secret) { hashing = bloomkit::KeyHashing(core.seed(), secret); }
    // Single-key adds since the last capacity check (common.hpp); GIL-protected,
    // atomic on free-threaded builds (a reset racing an increment only delays the check).
    GilCounter unchecked_adds{0};
    // Live views of the core's memory (_frame_parts(), common.hpp), plus one
    // while _frame_parts() records them. Atomic: clear() reads it under the
    // filter's lock, possibly without the GIL.
    std::atomic<uint32_t> frame_views{0};

    // Every write to the core goes through these (guard.write and
    // guard.released_write plus the copy-on-write above).
    template <class F>
    auto write(F&& f) {
        return guard.write([&] {
            before_write();
            return f();
        });
    }
    template <class F>
    auto released_write(F&& f) {
        return guard.released_write([&] {
            before_write();
            return f();
        });
    }

    // What a new view of the core's arrays holds on to besides the filter
    // object (null unless the core is copy-on-write). Called under the
    // filter's shared lock, so concurrently with other readers only.
    std::shared_ptr<void> view_keeper() {
        if constexpr (HandsOffArrays<Core>::value) {
            std::lock_guard<std::mutex> lock(viewed_mutex_);
            if (viewed_ == nullptr) viewed_ = std::make_shared<ViewedArrays>();
            return viewed_;
        } else {
            return nullptr;
        }
    }

  private:
    // Under the exclusive lock (or the GIL with no thread inside the
    // filter), so no view is being taken. use_count() > 1: a view still
    // holds the shared ViewedArrays (a count read just as the last view
    // dies only costs a needless copy; a new view cannot appear now).
    void before_write() {
        if constexpr (HandsOffArrays<Core>::value) {
            if (viewed_ == nullptr) return;
            if (viewed_.use_count() > 1) core.hand_off_arrays(viewed_->retired);
            viewed_.reset();
        }
    }
    std::mutex viewed_mutex_;
    std::shared_ptr<ViewedArrays> viewed_;
};

// The TypeError for an object made with Cls.__new__(Cls) whose __init__
// never ran: it holds no C++ object, so no method may run on it.
inline py::type_error not_initialised(py::handle self) {
    return py::type_error(std::string(Py_TYPE(self.ptr())->tp_name) +
                          " object is not initialised (__init__ was not called)");
}

}  // namespace bloomkit_py

namespace pybind11 {
namespace detail {

// Every binding that takes a filter (`self` or another operand) receives it
// through this caster, which refuses an instance whose holder was never
// constructed. pybind11's own caster would hand over whatever the value
// pointer holds, so without this check methods read garbage or crash.
template <class Core>
class type_caster<bloomkit_py::Guarded<Core>> : public type_caster_base<bloomkit_py::Guarded<Core>> {
    using Base = type_caster_base<bloomkit_py::Guarded<Core>>;

  public:
    bool load(handle src, bool convert) {
        if (!Base::load(src, convert)) return false;
        if (!isinstance(src, get_type_handle(typeid(bloomkit_py::Guarded<Core>), false))) return true;
        auto* inst = reinterpret_cast<instance*>(src.ptr());
        const value_and_holder v_h = inst->get_value_and_holder(get_type_info(typeid(bloomkit_py::Guarded<Core>)));
        if (!v_h.holder_constructed() || v_h.value_ptr() == nullptr) throw bloomkit_py::not_initialised(src);
        return true;
    }
};

}  // namespace detail
}  // namespace pybind11
