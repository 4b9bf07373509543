#pragma once
// The value of an exact Python int key, read without the general key path:
// the single-key calls (add, in, ...) hash an int in [-2**63, 2**64) as its
// 8 little-endian bytes (value mod 2**64), and reading it is a large share of
// such a call. PyLong_AsLongLongAndOverflow is ~65 instructions for a 63-bit
// int (one loop turn per 30-bit digit with overflow checks, callgrind), more
// than the MurmurHash3 of the 8 bytes.
//
// Each CPython gets the cheapest read it documents, chosen at compile time
// (the extension is built for one minor version):
//   3.11       "digits": the sign-magnitude 30-bit digit array with the digit
//              count in ob_size (cpython/longintrepr.h, which Python.h
//              includes in 3.11). Its layout changed in 3.12 (lv_tag), so this
//              read is compiled for 3.11 only.
//   3.12       "compact": PyUnstable_Long_IsCompact / PyUnstable_Long_CompactValue
//              (inline reads of one word, no call) for |v| < 2**30, else
//              PyLong_AsLongLongAndOverflow.
//   3.13-3.15  "compact+native_bytes": the compact accessors, else one
//              PyLong_AsNativeBytes into 8 bytes with Py_ASNATIVEBYTES_UNSIGNED_BUFFER,
//              which covers all of [-2**63, 2**64) in one call.
//   others     "public": PyLong_AsNativeBytes alone on a CPython newer than the
//              ones tested (PyUnstable_ API may change in any minor release), and
//              PyLong_AsLongLongAndOverflow before 3.11.
// exact_int_value_public() is the version-independent public read; the
// bindings expose both (_core._int_key_paths) so tests/test_int_keys.py can
// compare them on every tested version.

#include <Python.h>

#include <cstdint>
#include <cstring>

namespace bloomkit_py {

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000 && PyLong_SHIFT == 30
#define BLOOMKIT_INT_FAST_PATH "digits"
#elif PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030D0000
#define BLOOMKIT_INT_FAST_PATH "compact"
#elif PY_VERSION_HEX >= 0x030D0000 && PY_VERSION_HEX < 0x03100000
#define BLOOMKIT_INT_FAST_PATH "compact+native_bytes"
#else
#define BLOOMKIT_INT_FAST_PATH "public"
#endif

inline constexpr const char* kIntFastPath = BLOOMKIT_INT_FAST_PATH;

// The public call every version has: value mod 2**64 for an exact int in
// [-2**63, 2**63); false for anything else (the general path then decides,
// and raises outside [-2**63, 2**64)).
inline bool exact_int_value_public(PyObject* obj, uint64_t& out, bool& error) {
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow != 0) return false;
    if (value == -1 && PyErr_Occurred()) {
        error = true;
        return false;
    }
    out = static_cast<uint64_t>(value);
    return true;
}

#if PY_VERSION_HEX >= 0x030D0000
// value mod 2**64 for [-2**63, 2**64) through the public PyLong_AsNativeBytes:
// with UNSIGNED_BUFFER it reports needing at most 8 bytes exactly for that
// range (a negative value as two's complement, a positive one up to 2**64 - 1).
inline bool native_bytes_value(PyObject* obj, uint64_t& out, bool& error) {
    unsigned char bytes[8];
    const Py_ssize_t needed =
        PyLong_AsNativeBytes(obj, bytes, 8, Py_ASNATIVEBYTES_LITTLE_ENDIAN | Py_ASNATIVEBYTES_UNSIGNED_BUFFER);
    if (needed < 0) {
        error = true;
        return false;
    }
    if (needed > 8) return false;
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
    out = value;
    return true;
}
#endif

// The fast read: true with value mod 2**64 when it could read the value,
// false when the general path must decide (values it does not cover, or an
// error was set: then `error` is true). `obj` must be an exact int.
inline bool exact_int_value(PyObject* obj, uint64_t& out, bool& error) {
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000 && PyLong_SHIFT == 30
    (void)error;
    const Py_ssize_t size = Py_SIZE(obj);
    const digit* d = reinterpret_cast<PyLongObject*>(obj)->ob_digit;
    uint64_t magnitude;
    switch (size < 0 ? -size : size) {
        case 0: out = 0; return true;
        case 1: magnitude = d[0]; break;
        case 2: magnitude = d[0] | (uint64_t(d[1]) << 30); break;
        case 3:
            if (d[2] >> 4) return false;  // >= 2**64
            magnitude = d[0] | (uint64_t(d[1]) << 30) | (uint64_t(d[2]) << 60);
            break;
        default: return false;
    }
    if (size >= 0) {
        out = magnitude;
        return true;
    }
    if (magnitude > (uint64_t(1) << 63)) return false;  // < -2**63
    out = 0 - magnitude;                                // two's complement, as static_cast<uint64_t>(value)
    return true;
#elif PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x03100000
    PyLongObject* as_long = reinterpret_cast<PyLongObject*>(obj);
    if (PyUnstable_Long_IsCompact(as_long)) {
        out = static_cast<uint64_t>(static_cast<int64_t>(PyUnstable_Long_CompactValue(as_long)));
        return true;
    }
#if PY_VERSION_HEX >= 0x030D0000
    return native_bytes_value(obj, out, error);
#else
    return exact_int_value_public(obj, out, error);
#endif
#elif PY_VERSION_HEX >= 0x03100000
    return native_bytes_value(obj, out, error);
#else
    return exact_int_value_public(obj, out, error);
#endif
}

}  // namespace bloomkit_py
