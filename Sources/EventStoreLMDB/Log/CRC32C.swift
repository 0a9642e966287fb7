/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven, eight bytes at a time
/// ("slicing by 8") where the bytes are contiguous.
///
/// The record checksum of the event log: every record read back is checked, so its cost is part of
/// every rebuild and verify (a byte at a time it was about 1,400 instructions of a 250-byte record).
/// Check value: `"123456789"` gives `0xE3069283`.
public enum CRC32C: Sendable {
    /// Eight tables of 256 entries: table 0 is the byte-at-a-time table, table k the CRC of a byte
    /// followed by k zero bytes.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for index in 0..<256 {
            var crc = UInt32(index)
            for _ in 0..<8 {
                crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1
            }
            tables[index] = crc
        }
        for k in 1..<8 {
            for index in 0..<256 {
                let previous = tables[(k - 1) * 256 + index]
                tables[k * 256 + index] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    /// The CRC-32C of `bytes`.
    public static func checksum<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt32 {
        if let crc = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0)) }) { return crc }
        var crc: UInt32 = 0xFFFF_FFFF
        tables.withUnsafeBufferPointer { table in
            for byte in bytes {
                crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
            }
        }
        return crc ^ 0xFFFF_FFFF
    }

    /// The CRC-32C of the bytes of `buffer`.
    public static func checksum(_ buffer: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        tables.withUnsafeBufferPointer { t in
            let count = buffer.count
            var i = 0
            while count - i >= 8 {
                // The CRC so far is folded into the first four bytes (the polynomial is reflected:
                // the first byte is the lowest), then each of the eight bytes is looked up in the
                // table that carries it past the bytes after it.
                let word = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: i, as: UInt64.self)) ^ UInt64(crc)
                crc = t[7 * 256 + Int(word & 0xFF)] ^ t[6 * 256 + Int(word >> 8 & 0xFF)]
                    ^ t[5 * 256 + Int(word >> 16 & 0xFF)] ^ t[4 * 256 + Int(word >> 24 & 0xFF)]
                    ^ t[3 * 256 + Int(word >> 32 & 0xFF)] ^ t[2 * 256 + Int(word >> 40 & 0xFF)]
                    ^ t[1 * 256 + Int(word >> 48 & 0xFF)] ^ t[Int(word >> 56)]
                i += 8
            }
            while i < count {
                crc = t[Int((crc ^ UInt32(buffer[i])) & 0xFF)] ^ (crc >> 8)
                i += 1
            }
        }
        return crc ^ 0xFFFF_FFFF
    }
}
