import CLMDB

/// Turns values into the bytes LMDB stores, and back.
///
/// Decoding reads straight from the memory map: the buffer is only valid during the call, so a
/// codec must copy whatever it keeps.
public protocol LMDBValueCodec: Sendable {
    /// The Swift type stored under this codec.
    associatedtype Item

    /// The bytes stored for `item`.
    static func encode(_ item: Item) -> [UInt8]

    /// The item stored in `bytes` (valid only during the call); throws an ``LMDBError`` of kind
    /// ``LMDBError/Kind/badValueSize`` when the bytes do not hold such an item.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> Item
}

/// A codec usable for keys: LMDB sorts keys by their bytes, so a key codec's byte order is the
/// order of iteration (big-endian integers make byte order equal numeric order).
public protocol LMDBKeyCodec: LMDBValueCodec {}

/// Unsigned 64-bit integers stored as 8 big-endian bytes, so byte order is numeric order.
public enum BigEndianUInt64: LMDBKeyCodec {
    /// Stored items are `UInt64`.
    public typealias Item = UInt64

    /// The 8 big-endian bytes of `item`.
    public static func encode(_ item: UInt64) -> [UInt8] {
        withUnsafeBytes(of: item.bigEndian) { Array($0) }
    }

    /// The integer in exactly 8 big-endian bytes.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> UInt64 {
        guard bytes.count == 8 else {
            throw LMDBError(
                operation: "decode(BigEndianUInt64)", code: MDB_BAD_VALSIZE,
                message: "expected 8 bytes, found \(bytes.count)")
        }
        var value: UInt64 = 0
        for byte in bytes { value = value << 8 | UInt64(byte) }
        return value
    }
}

/// Unsigned 32-bit integers stored as 4 big-endian bytes.
public enum BigEndianUInt32: LMDBKeyCodec {
    /// Stored items are `UInt32`.
    public typealias Item = UInt32

    /// The 4 big-endian bytes of `item`.
    public static func encode(_ item: UInt32) -> [UInt8] {
        withUnsafeBytes(of: item.bigEndian) { Array($0) }
    }

    /// The integer in exactly 4 big-endian bytes.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> UInt32 {
        guard bytes.count == 4 else {
            throw LMDBError(
                operation: "decode(BigEndianUInt32)", code: MDB_BAD_VALSIZE,
                message: "expected 4 bytes, found \(bytes.count)")
        }
        var value: UInt32 = 0
        for byte in bytes { value = value << 8 | UInt32(byte) }
        return value
    }
}

/// Raw bytes, stored as they are.
public enum RawBytes: LMDBKeyCodec {
    /// Stored items are byte arrays.
    public typealias Item = [UInt8]

    /// The bytes themselves.
    public static func encode(_ item: [UInt8]) -> [UInt8] { item }

    /// A copy of the stored bytes.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> [UInt8] {
        Array(bytes)
    }
}

/// Strings stored as their UTF-8 bytes (no terminator).
public enum UTF8String: LMDBKeyCodec {
    /// Stored items are strings.
    public typealias Item = String

    /// The UTF-8 bytes of `item`.
    public static func encode(_ item: String) -> [UInt8] { Array(item.utf8) }

    /// The string in `bytes`; throws when they are not valid UTF-8.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> String {
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw LMDBError(
                operation: "decode(UTF8String)", code: MDB_BAD_VALSIZE, message: "bytes are not valid UTF-8")
        }
        return string
    }
}
