#if canImport(CLMDBVendored)
import CLMDBVendored
#else
import CLMDB
#endif

/// Turns values into the bytes LMDB stores, and back.
///
/// Decoding reads straight from the memory map: the buffer is only valid during the call, so a
/// codec must copy whatever it keeps.
public protocol LMDBValueCodec: Sendable {
    /// The Swift type stored under this codec.
    associatedtype Item

    /// The bytes stored for `item`.
    static func encode(_ item: Item) -> [UInt8]

    /// Appends exactly the bytes of ``encode(_:)`` for `item` to `bytes`. The default appends
    /// ``encode(_:)``'s array; a codec of a few fixed bytes writes them in place, so that a
    /// composite key (``KeyPair``) is built in one array instead of one array per part and a
    /// copy of each (issue 37: an appended event made about 85 heap allocations, most of them
    /// such arrays).
    static func encode(_ item: Item, into bytes: inout [UInt8])

    /// The item stored in `bytes` (valid only during the call); throws an ``LMDBError`` of kind
    /// ``LMDBError/Kind/badValueSize`` when the bytes do not hold such an item.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> Item
}

extension LMDBValueCodec {
    /// The default: ``encode(_:)``'s bytes, appended.
    @inlinable
    public static func encode(_ item: Item, into bytes: inout [UInt8]) { bytes.append(contentsOf: encode(item)) }

    /// ``encode(_:into:)`` into a new array that has room for `capacity` bytes: the ``encode(_:)``
    /// of a codec that writes its bytes in place.
    @inlinable
    public static func encoded(_ item: Item, reserving capacity: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(capacity)
        encode(item, into: &bytes)
        return bytes
    }
}

/// A codec usable for keys: LMDB sorts keys by their bytes, so a key codec's byte order is the
/// order of iteration (big-endian integers make byte order equal numeric order).
public protocol LMDBKeyCodec: LMDBValueCodec {}

/// Unsigned 64-bit integers stored as 8 big-endian bytes, so byte order is numeric order.
public enum BigEndianUInt64: LMDBKeyCodec {
    /// Stored items are `UInt64`.
    public typealias Item = UInt64

    /// The 8 big-endian bytes of `item`.
    @inlinable
    public static func encode(_ item: UInt64) -> [UInt8] {
        withUnsafeBytes(of: item.bigEndian) { Array($0) }
    }

    /// Appends the 8 big-endian bytes of `item`.
    @inlinable
    public static func encode(_ item: UInt64, into bytes: inout [UInt8]) {
        withUnsafeBytes(of: item.bigEndian) { bytes.append(contentsOf: $0) }
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
    @inlinable
    public static func encode(_ item: UInt32) -> [UInt8] {
        withUnsafeBytes(of: item.bigEndian) { Array($0) }
    }

    /// Appends the 4 big-endian bytes of `item`.
    @inlinable
    public static func encode(_ item: UInt32, into bytes: inout [UInt8]) {
        withUnsafeBytes(of: item.bigEndian) { bytes.append(contentsOf: $0) }
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

/// A key codec whose items are always stored in exactly ``byteCount`` bytes, so it can lead a
/// composite key (``KeyPair``): with a fixed-width first part, byte order of the pair is the order
/// of the first part, then of the second.
public protocol LMDBFixedWidthKeyCodec: LMDBKeyCodec {
    /// The number of bytes of every encoded item.
    static var byteCount: Int { get }
}

extension BigEndianUInt64: LMDBFixedWidthKeyCodec {
    /// Always 8 bytes.
    public static var byteCount: Int { 8 }
}

extension BigEndianUInt32: LMDBFixedWidthKeyCodec {
    /// Always 4 bytes.
    public static var byteCount: Int { 4 }
}

/// A composite key: the bytes of `First` (fixed width) followed by the bytes of `Second`.
///
/// Keys sort by the first part, then by the second (for example a reader's 16 ID bytes followed by
/// a big-endian position sorts by reader, then by position), so a prefix walk over the first
/// part's bytes visits one first part's keys in the second part's order.
///
/// The parameters are constrained where it conforms, not here: so instantiating the type's
/// metadata at run time (at a store's open) needs no protocol conformance lookup, which scans every
/// conformance record of the process (about 160,000 instructions for each new key type).
///
/// `Sendable`: it has no values.
public enum KeyPair<First, Second>: Sendable {}

extension KeyPair: LMDBKeyCodec where First: LMDBFixedWidthKeyCodec, Second: LMDBKeyCodec {}

extension KeyPair: LMDBValueCodec where First: LMDBFixedWidthKeyCodec, Second: LMDBKeyCodec {
    /// Stored items are pairs.
    public typealias Item = (First.Item, Second.Item)

    /// The first part's bytes, then the second part's. Inlinable: keys are encoded on every write
    /// of the store, and a client module then specializes it for its concrete parts (no generic
    /// metadata or witness-table calls at run time).
    @inlinable
    public static func encode(_ item: Item) -> [UInt8] {
        // One array for the whole key: room for the first part and a second of up to 16 bytes
        // (every fixed-width part the store uses) before it would have to grow.
        encoded(item, reserving: First.byteCount + 16)
    }

    /// Appends the first part's bytes, then the second part's, each in place.
    @inlinable
    public static func encode(_ item: Item, into bytes: inout [UInt8]) {
        First.encode(item.0, into: &bytes)
        Second.encode(item.1, into: &bytes)
    }

    /// The pair in `bytes`: the first ``LMDBFixedWidthKeyCodec/byteCount`` bytes decode as `First`,
    /// the rest as `Second`; throws when there are fewer bytes or when either part does not decode.
    /// Inlinable, like ``encode(_:)``: unspecialized, decoding a (reader, position) key of the
    /// reader index cost about 1,000 instructions, through witness tables for both parts.
    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> Item {
        guard bytes.count >= First.byteCount else {
            throw LMDBError.undecodable(
                codec: "KeyPair", "expected at least \(First.byteCount) bytes for the first part, found \(bytes.count)")
        }
        let first = try First.decode(UnsafeRawBufferPointer(rebasing: bytes[..<First.byteCount]))
        let second = try Second.decode(UnsafeRawBufferPointer(rebasing: bytes[First.byteCount...]))
        return (first, second)
    }
}

extension KeyPair: LMDBFixedWidthKeyCodec where First: LMDBFixedWidthKeyCodec, Second: LMDBFixedWidthKeyCodec {
    /// Both parts' widths.
    public static var byteCount: Int { First.byteCount + Second.byteCount }
}
