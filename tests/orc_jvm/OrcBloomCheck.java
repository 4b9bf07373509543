// Test helper (tests/test_orc_bloom.py compiles it with javac against the
// orc-core and orc-format jars pyspark ships): builds and queries ORC's own
// org.apache.orc.util.BloomFilter, many keys per run.
//
//   build N FPP KEYS OUT   BloomFilterUtf8(N, FPP) holding KEYS; writes
//                          OUT.utf8 and OUT.legacy, the orc.proto.BloomFilter
//                          messages BloomFilterIO.serialize makes of it as a
//                          BloomFilterUtf8 and as a plain BloomFilter
//   test FILTER KEYS OUT   the message FILTER read back as ORC reads a
//                          BLOOM_FILTER_UTF8 / BLOOM_FILTER stream; one byte
//                          (0/1) per key of KEYS: its test*() answer
//
// KEYS: records of a kind byte then the value: 0 long (8 bytes LE),
// 1 double (8 bytes LE), 2 string, 3 binary (an int32 LE length, then the
// UTF-8 / raw bytes).
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

import org.apache.orc.OrcProto;
import org.apache.orc.util.BloomFilter;
import org.apache.orc.util.BloomFilterIO;
import org.apache.orc.util.BloomFilterUtf8;

public final class OrcBloomCheck {
    private OrcBloomCheck() {}

    public static void main(String[] args) throws IOException {
        if (args[0].equals("build")) {
            BloomFilterUtf8 f = new BloomFilterUtf8(Long.parseLong(args[1]), Double.parseDouble(args[2]));
            ByteBuffer in = keys(args[3]);
            while (in.hasRemaining()) {
                byte kind = in.get();
                if (kind == 0) f.addLong(in.getLong());
                else if (kind == 1) f.addDouble(in.getDouble());
                else if (kind == 2) f.addString(new String(bytes(in), StandardCharsets.UTF_8));
                else f.add(bytes(in));
            }
            write(args[4] + ".utf8", f);
            write(args[4] + ".legacy", new BloomFilter(f.getBitSet(), f.getNumHashFunctions()));
        } else {
            OrcProto.BloomFilter message = OrcProto.BloomFilter.parseFrom(Files.readAllBytes(Paths.get(args[1])));
            long[] words;
            if (message.hasUtf8Bitset()) {
                words = new long[message.getUtf8Bitset().size() / 8];
                message.getUtf8Bitset().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(words);
            } else {
                words = new long[message.getBitsetCount()];
                for (int i = 0; i < words.length; i++) words[i] = message.getBitset(i);
            }
            BloomFilterUtf8 f = new BloomFilterUtf8(words, message.getNumHashFunctions());
            ByteBuffer in = keys(args[2]);
            java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            while (in.hasRemaining()) {
                byte kind = in.get();
                boolean hit;
                if (kind == 0) hit = f.testLong(in.getLong());
                else if (kind == 1) hit = f.testDouble(in.getDouble());
                else if (kind == 2) hit = f.testString(new String(bytes(in), StandardCharsets.UTF_8));
                else hit = f.test(bytes(in));
                out.write(hit ? 1 : 0);
            }
            Files.write(Paths.get(args[3]), out.toByteArray());
        }
    }

    private static ByteBuffer keys(String path) throws IOException {
        return ByteBuffer.wrap(Files.readAllBytes(Paths.get(path))).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static byte[] bytes(ByteBuffer in) {
        byte[] value = new byte[in.getInt()];
        in.get(value);
        return value;
    }

    private static void write(String path, BloomFilter f) throws IOException {
        OrcProto.BloomFilter.Builder builder = OrcProto.BloomFilter.newBuilder();
        BloomFilterIO.serialize(builder, f);
        Files.write(Paths.get(path), builder.build().toByteArray());
    }
}
