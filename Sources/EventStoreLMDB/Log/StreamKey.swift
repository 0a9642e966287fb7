import Foundation
import LMDB
import ReadingEvents

/// A stream of the log as the store keys it: the stream field of every record (log format 3), the
/// `streams` table's key and the prefix of the `streamIndex` keys.
///
/// Encoding (self-delimiting, so a key followed by more bytes is never mistaken for another key):
///
/// | kind byte | then | total | stream |
/// |---|---|---|---|
/// | `0x01` | reader UUID (16), 16 zero bytes | 33 bytes | ``StreamID/reader(_:)`` |
/// | `0x02` | reader UUID (16), book UUID (16) | 33 bytes | ``StreamID/book(reader:book:)`` |
/// | `0x03` | big-endian length n (2), n UTF-8 bytes | 3 + n bytes | any other name (raw-log users) |
///
/// Why fixed 33-byte keys and not interned numbers: a number would need a second table (name to
/// number, and back on every read), its counter kept in step inside every append transaction, and
/// a translation at every merge and export, since numbers would differ between replicas. A
/// 33-byte key is the same on every replica, needs no lookup, and decodes with two 16-byte copies
/// (no text parsing on the read path); it costs 25 bytes per record and per stream-index key more
/// than an 8-byte number, against the 80 bytes of text it replaces in each.
///
/// A name given as text (``init(name:)``) that is the canonical text of a ``StreamID``
/// (`book:<reader>:<book>` or `reader:<reader>`, lowercase UUIDs) is that stream's binary key, so
/// raw-log users naming a reading stream by its text reach the same stream as ``ReadingStore``;
/// every other name is a named (`0x03`) key. So each key has exactly one text form
/// (``description``) and no two keys share one.
///
/// `Sendable`: a value holding identifiers or a string.
public struct StreamKey: Hashable, Sendable, CustomStringConvertible {
    /// The kind bytes.
    enum Kind {
        static let reader: UInt8 = 0x01
        static let book: UInt8 = 0x02
        static let named: UInt8 = 0x03
    }
    /// The size of a reading stream's key.
    static let idKeySize = 33

    enum Storage: Hashable, Sendable {
        case reading(StreamID)
        case named(String)
    }

    let storage: Storage

    /// The key of a reader's or a book's stream.
    public init(_ stream: StreamID) {
        storage = .reading(stream)
    }

    /// The key of a stream named by text: the binary key of a ``StreamID`` when `name` is one's
    /// canonical text, else a named key. The name's rules (1 to ``EventLog/maxStreamNameBytes``
    /// UTF-8 bytes, no NUL) are checked when the key is used
    /// (``EventStoreError/invalidStreamName(_:)``).
    public init(name: String) {
        if let stream = StreamID(name), stream.description == name {
            storage = .reading(stream)
        } else {
            storage = .named(name)
        }
    }

    /// The reader's or book's stream, or nil for a named key.
    public var streamID: StreamID? {
        switch storage {
        case .reading(let stream): stream
        case .named: nil
        }
    }

    /// The stream's text: a ``StreamID``'s canonical text, or the name.
    public var description: String {
        switch storage {
        case .reading(let stream): stream.description
        case .named(let name): name
        }
    }

    /// The key's bytes (see the table above).
    ///
    /// - Throws: ``EventStoreError/invalidStreamName(_:)`` for a named key that breaks the name's rules.
    public func encoded() throws(EventStoreError) -> [UInt8] {
        var bytes: [UInt8] = []
        // Room for a version after a reading stream's key (a `streamIndex` key), so neither the
        // key nor that key grows its array.
        if case .reading = storage { bytes.reserveCapacity(Self.idKeySize + 8) }
        try append(to: &bytes)
        return bytes
    }

    /// Appends the key's bytes to `bytes`.
    func append(to bytes: inout [UInt8]) throws(EventStoreError) {
        switch storage {
        case .reading(let stream):
            switch stream {
            case .reader(let reader):
                bytes.append(Kind.reader)
                Self.appendUUID(reader.uuid, to: &bytes)
                bytes.append(contentsOf: repeatElement(0, count: 16))
            case .book(let reader, let book):
                bytes.append(Kind.book)
                Self.appendUUID(reader.uuid, to: &bytes)
                Self.appendUUID(book.uuid, to: &bytes)
            }
        case .named(let name):
            let utf8 = Array(name.utf8)
            guard !utf8.isEmpty, utf8.count <= EventLog.maxStreamNameBytes, !utf8.contains(0) else {
                throw EventStoreError.invalidStreamName(name)
            }
            bytes.append(Kind.named)
            bytes.append(UInt8(utf8.count >> 8))
            bytes.append(UInt8(utf8.count & 0xFF))
            bytes.append(contentsOf: utf8)
        }
    }

    private static func appendUUID(_ uuid: UUID, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: uuid.uuid) { bytes.append(contentsOf: $0) }
    }

    /// Decodes the key at the start of `bytes`; returns it and its length in bytes.
    ///
    /// - Throws: a ``DecodingFailure`` naming the rule: no kind byte, an unknown kind, too few
    ///   bytes for the kind, a reader key whose book bytes are not zero, a named key that is
    ///   empty, too long, not UTF-8, holds a NUL, or is the canonical text of a reading stream
    ///   (which has its binary key).
    static func decodePrefix(of bytes: UnsafeRawBufferPointer) throws(DecodingFailure) -> (key: StreamKey, count: Int) {
        guard let kind = bytes.first else { throw DecodingFailure("no kind byte") }
        switch kind {
        case Kind.reader, Kind.book:
            guard bytes.count >= idKeySize else {
                throw DecodingFailure("kind \(kind) needs \(idKeySize) bytes, found \(bytes.count)")
            }
            let reader = ReaderID(uuid(bytes, at: 1))
            if kind == Kind.reader {
                guard UnsafeRawBufferPointer(rebasing: bytes[17..<33]).allSatisfy({ $0 == 0 }) else {
                    throw DecodingFailure("a reader stream's last 16 bytes must be zero")
                }
                return (StreamKey(.reader(reader)), idKeySize)
            }
            return (StreamKey(.book(reader: reader, book: BookID(uuid(bytes, at: 17)))), idKeySize)
        case Kind.named:
            guard bytes.count >= 3 else { throw DecodingFailure("a named stream's length needs 2 bytes") }
            let length = Int(bytes[1]) << 8 | Int(bytes[2])
            guard (1...EventLog.maxStreamNameBytes).contains(length) else {
                throw DecodingFailure("a named stream's length must be 1 ... \(EventLog.maxStreamNameBytes), found \(length)")
            }
            guard bytes.count >= 3 + length else {
                throw DecodingFailure("a named stream of \(length) bytes is truncated at \(bytes.count - 3)")
            }
            let utf8 = UnsafeRawBufferPointer(rebasing: bytes[3..<(3 + length)])
            guard !utf8.contains(0), let name = String(validating: utf8, as: UTF8.self) else {
                throw DecodingFailure("a named stream must be UTF-8 without NUL")
            }
            let key = StreamKey(name: name)
            guard key.streamID == nil else {
                throw DecodingFailure("the named stream \"\(name)\" is a reading stream's text (it has a binary key)")
            }
            return (key, 3 + length)
        default:
            throw DecodingFailure("unknown kind byte \(kind) (expected 1, 2 or 3)")
        }
    }

    /// The key in exactly `bytes`.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(DecodingFailure) -> StreamKey {
        let (key, count) = try decodePrefix(of: bytes)
        guard count == bytes.count else {
            throw DecodingFailure("\(bytes.count - count) bytes after the stream key")
        }
        return key
    }

    /// The UUID in the 16 bytes at `offset` (one unaligned load, no parsing). Precondition: the
    /// caller checked that `bytes` holds them.
    private static func uuid(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UUID {
        precondition(offset >= 0 && offset + 16 <= bytes.count, "16 UUID bytes at \(offset) of \(bytes.count)")
        return UUID(uuid: bytes.loadUnaligned(fromByteOffset: offset, as: uuid_t.self))
    }

    /// Why bytes are not a stream key.
    struct DecodingFailure: Error {
        let rule: String
        init(_ rule: String) { self.rule = rule }
    }
}

/// `streams`: a stream's key bytes (``StreamKey``).
enum StreamKeyCodec: LMDBKeyCodec {
    typealias Item = StreamKey
    /// The key's bytes. Precondition: a valid key (a named key's rules are checked before any
    /// write by ``StreamKey/encoded()``).
    static func encode(_ item: StreamKey) -> [UInt8] { (try? item.encoded()) ?? [] }
    /// The key in exactly `bytes`.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> StreamKey {
        do {
            return try StreamKey.decode(bytes)
        } catch {
            throw LMDBError.undecodable(codec: "StreamKeyCodec", error.rule)
        }
    }
}
