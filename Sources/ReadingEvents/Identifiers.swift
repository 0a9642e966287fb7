import Foundation

/// A UUID-based identifier, tagged with the kind of thing it names so that a ``BookID`` can never
/// be passed where a ``ReaderID`` is expected.
///
/// `Sendable`: a value type holding a `UUID`.
public struct TaggedID<Tag: IdentifierTag>: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The underlying UUID.
    public let uuid: UUID

    /// Wraps an existing UUID.
    public init(_ uuid: UUID) { self.uuid = uuid }

    /// A new random identifier.
    public init() { self.uuid = UUID() }

    /// Parses the canonical UUID text form (`E621E1F8-C36C-495A-93FC-0C247A3E6E5F`), case-insensitive.
    public init?(uuidString: String) {
        guard let uuid = UUID(canonical: uuidString) ?? UUID(uuidString: uuidString) else { return nil }
        self.uuid = uuid
    }

    /// The 16 bytes of the UUID, in RFC 4122 order.
    public var bytes: [UInt8] { uuid.bytes }

    /// Builds an identifier from 16 bytes; `nil` when the count is not 16.
    ///
    /// Inlinable, like `UUID(bytes:)`: specialized where it is called (record decoders), so a
    /// process's first decode looks up no `Collection` conformance at run time.
    @inlinable
    public init?(bytes: some Collection<UInt8>) {
        guard let uuid = UUID(bytes: bytes) else { return nil }
        self.uuid = uuid
    }

    /// The lowercase canonical text form.
    public var description: String { uuid.uuidString.lowercased() }

    /// Hashes the 16 bytes as two 64-bit words: `UUID`'s own hashing feeds them to the hasher as a
    /// byte buffer, through a call that is not inlined (about 110 instructions where this takes
    /// about 30). Identifiers key every dictionary of the fold (issue 37). Equal identifiers hash
    /// equally, as `==` compares the same bytes.
    public func hash(into hasher: inout Hasher) {
        withUnsafeBytes(of: uuid.uuid) { raw in
            hasher.combine(raw.loadUnaligned(as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
    }

    /// Orders by the UUID's bytes, so orderings never depend on locale or hashing.
    ///
    /// Inlinable, and two comparisons of big-endian words (the bytes' order): this runs inside
    /// every sort and range walk of view keys, where a call to `memcmp` cost about 23 instructions
    /// a comparison (`Scripts/query-instructions.sh`, book detail in memory).
    @inlinable
    public static func < (lhs: Self, rhs: Self) -> Bool {
        let l = lhs.orderedWords, r = rhs.orderedWords
        return l.high != r.high ? l.high < r.high : l.low < r.low
    }

    /// The 16 bytes as two big-endian words: compared as numbers, they order as the bytes do.
    @inlinable
    var orderedWords: (high: UInt64, low: UInt64) {
        withUnsafeBytes(of: uuid.uuid) { raw in
            (UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self)), UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }
}

extension TaggedID: Codable {
    /// Decodes the canonical UUID text form.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let uuid = UUID(uuidString: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "\(Tag.name): \"\(text)\" is not a UUID")
        }
        self.uuid = uuid
    }

    /// Encodes the lowercase canonical UUID text form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// The kind of thing a ``TaggedID`` names. Conforming types are uninhabited markers.
public protocol IdentifierTag: Sendable {
    /// A short name used in messages ("book", "reader", ...).
    static var name: String { get }
}

/// Marker for reader identifiers.
public enum ReaderTag: IdentifierTag { public static let name = "reader" }
/// Marker for book identifiers.
public enum BookTag: IdentifierTag { public static let name = "book" }
/// Marker for collected-sentence identifiers.
public enum SentenceTag: IdentifierTag { public static let name = "sentence" }
/// Marker for memo identifiers.
public enum MemoTag: IdentifierTag { public static let name = "memo" }
/// Marker for timed reading-session identifiers.
public enum SessionTag: IdentifierTag { public static let name = "session" }
/// Marker for event identifiers.
public enum EventTag: IdentifierTag { public static let name = "event" }

/// Identifies a reader (one store can hold many: a family device, a server).
public typealias ReaderID = TaggedID<ReaderTag>
/// Identifies a book in a reader's library.
public typealias BookID = TaggedID<BookTag>
/// Identifies a collected sentence.
public typealias SentenceID = TaggedID<SentenceTag>
/// Identifies a memo.
public typealias MemoID = TaggedID<MemoTag>
/// Identifies a timed reading session.
public typealias SessionID = TaggedID<SessionTag>
/// Identifies one event; appending an event ID that is already stored is an idempotent no-op.
public typealias EventID = TaggedID<EventTag>

extension UUID {
    /// Parses the canonical 36-character form (8-4-4-4-12 hex digits, either case) without
    /// Foundation's scanner, which dominates stream-name parsing when a log is replayed; `nil` for
    /// any other form.
    init?(canonical text: String) {
        guard let parsed = text.utf8.withContiguousStorageIfAvailable({ UUID.parseCanonical($0, at: 0, length: $0.count) }),
              let value = parsed else { return nil }
        self.init(uuid: value)
    }

    /// Parses the canonical form occupying exactly `chars[offset ..< offset + 36]` (and `length`
    /// must be 36 when the whole buffer is meant); `nil` for anything else.
    static func parseCanonical(_ chars: UnsafeBufferPointer<UInt8>, at offset: Int, length: Int = 36) -> uuid_t? {
        guard length == 36, offset >= 0, chars.count - offset >= 36 else { return nil }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = withUnsafeMutableBytes(of: &value) { bytes -> Bool in
            var index = 0, byte = 0
            while index < 36 {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard chars[offset + index] == UInt8(ascii: "-") else { return false }
                    index += 1
                    continue
                }
                guard let high = hexValue(chars[offset + index]), let low = hexValue(chars[offset + index + 1]) else { return false }
                bytes[byte] = high << 4 | low
                byte += 1
                index += 2
            }
            return true
        }
        return ok ? value : nil
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The 16 bytes of this UUID.
    public var bytes: [UInt8] {
        let u = uuid
        return [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15]
    }

    /// Builds a UUID from exactly 16 bytes; `nil` otherwise.
    ///
    /// Inlinable: every view and key decoder calls it with a slice; unspecialized, the first call
    /// in a process resolved the slice's `Collection` conformance at run time (a scan of every
    /// conformance record) and each call went through witness tables.
    /// Contiguous bytes (a raw buffer from the memory map, an array) are loaded in place; other
    /// collections are copied into an array first.
    @inlinable
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        if let uuid = bytes.withContiguousStorageIfAvailable({
            UUID(uuid: UnsafeRawBufferPointer($0).loadUnaligned(as: uuid_t.self))
        }) {
            self = uuid
            return
        }
        var b = Array(bytes)
        self = b.withUnsafeMutableBytes { raw in
            UUID(uuid: raw.loadUnaligned(as: uuid_t.self))
        }
        _ = b.count
    }
}
