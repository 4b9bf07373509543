// The ORC walk's inflater (orc_file_skip.hpp's Inflate) with ZLIB chunks
// inflated here, by zlib (raw_deflate.hpp), on the walking thread: no
// Python and no GIL for a ZLIB file. Chunks of the other codecs go to the
// inflater given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "../orc_file_skip.hpp"
#include "raw_deflate.hpp"

namespace bloomkit {
namespace orc {

// One walk thread's inflater (the zlib state is that thread's own).
inline Inflate inflate_zlib_here(Inflate other_codecs) {
    auto zlib = std::make_shared<RawDeflateInflater>();
    return [zlib, other = std::move(other_codecs)](uint32_t compression, const uint8_t* chunk, size_t size,
                                                   uint8_t* out, size_t capacity) -> size_t {
        if (compression != kZlib) return other(compression, chunk, size, out, capacity);
        const std::optional<size_t> produced = zlib->inflate(chunk, size, out, capacity);
        // A refused chunk leaves the file to orc.py's reader, which refuses
        // the same chunk and words why (one wording, in one place).
        if (!produced) throw ReadElsewhere{};
        return *produced;
    };
}

}  // namespace orc
}  // namespace bloomkit
