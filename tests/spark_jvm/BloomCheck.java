// Test helper run inside the Spark JVM (tests/test_spark.py compiles it with
// javac): queries Spark's own org.apache.spark.util.sketch.BloomFilter for
// many keys per py4j call, so that ~10^5 keys are checked in well under a
// second instead of one py4j round trip (~1 ms) per key.
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

import org.apache.spark.util.sketch.BloomFilter;

public final class BloomCheck {
    private BloomCheck() {}

    // keys: little-endian 8-byte longs. Returns one byte (0/1) per key.
    public static byte[] mightContainLongs(byte[] filter, byte[] keys) throws IOException {
        BloomFilter f = BloomFilter.readFrom(filter);
        ByteBuffer in = ByteBuffer.wrap(keys).order(ByteOrder.LITTLE_ENDIAN);
        byte[] out = new byte[keys.length / 8];
        for (int i = 0; i < out.length; i++) out[i] = (byte) (f.mightContainLong(in.getLong()) ? 1 : 0);
        return out;
    }

    // utf8: the keys' UTF-8 bytes back to back; offsets: n + 1 little-endian ints.
    public static byte[] mightContainStrings(byte[] filter, byte[] utf8, byte[] offsets) throws IOException {
        BloomFilter f = BloomFilter.readFrom(filter);
        ByteBuffer off = ByteBuffer.wrap(offsets).order(ByteOrder.LITTLE_ENDIAN);
        byte[] out = new byte[offsets.length / 4 - 1];
        int begin = off.getInt();
        for (int i = 0; i < out.length; i++) {
            int end = off.getInt();
            String key = new String(utf8, begin, end - begin, StandardCharsets.UTF_8);
            out[i] = (byte) (f.mightContainString(key) ? 1 : 0);
            begin = end;
        }
        return out;
    }

    // The filter re-serialised by Spark (readFrom then writeTo).
    public static byte[] roundTrip(byte[] filter) throws IOException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        BloomFilter.readFrom(filter).writeTo(out);
        return out.toByteArray();
    }

    // A filter built by Spark's BloomFilter.create(n, fpp) from longs or strings.
    public static byte[] buildLongs(long n, double fpp, byte[] keys) throws IOException {
        BloomFilter f = BloomFilter.create(n, fpp);
        ByteBuffer in = ByteBuffer.wrap(keys).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < keys.length / 8; i++) f.putLong(in.getLong());
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        f.writeTo(out);
        return out.toByteArray();
    }
}
