// The methods every file-backed filter binds (BloomFilter.open,
// RotatingBloomFilter.open): flush and close under the filter's guard, and
// the closed flag. The core needs close() and closed(); the file is the
// bloomkit::MappedFile the Python layer keeps (None for an in-memory filter).
#pragma once

#include <bloomkit/mapped_file.hpp>

#include <memory>

#include "common.hpp"

namespace bloomkit_py {

template <class Core>
void bind_file_methods(py::class_<Guarded<Core>>& cls) {
    using G = Guarded<Core>;
    // flush() and close() take the guard: flush reads the bits (shared
    // lock), close waits for every running batch of this process (exclusive
    // lock) before the bits are dropped, so no batch ever sees the mapping
    // go away under it.
    cls.def("_flush", [](G& self, std::shared_ptr<bloomkit::MappedFile> file) {
        self.guard.released_read([&] {
            if (self.core.closed()) throw bloomkit::ClosedError("I/O operation on closed filter");
            if (file) file->flush();
        });
    });
    // The last writer to close writes the checksum and marks the file closed
    // (MappedFile::close), after this process's batches have ended.
    cls.def("_close", [](G& self, std::shared_ptr<bloomkit::MappedFile> file) {
        self.released_write([&] {
            if (self.core.closed()) return;
            self.core.close();
            if (file) file->close();
        });
    });
    cls.def_property_readonly(
        "closed", [](G& self) { return self.core.closed(); },
        "True after close(): every further use raises ValueError.");
}

}  // namespace bloomkit_py
