import Foundation
@testable import ReadingEvents

/// Builds protobuf wire bytes by hand, so tests can make records the current encoder never writes
/// (old schema versions, newer builds' payloads, contradictions).
struct Wire {
    var bytes: [UInt8] = []

    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 { bytes.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        bytes.append(UInt8(v))
    }

    mutating func tag(_ field: UInt64, _ wireType: UInt64) { varint(field << 3 | wireType) }

    mutating func int(_ field: UInt64, _ value: Int64) { tag(field, 0); varint(UInt64(bitPattern: value)) }
    mutating func sint(_ field: UInt64, _ value: Int64) {
        tag(field, 0); varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }
    mutating func uint(_ field: UInt64, _ value: UInt64) { tag(field, 0); varint(value) }
    mutating func bytes(_ field: UInt64, _ value: [UInt8]) { tag(field, 2); varint(UInt64(value.count)); bytes += value }
    mutating func string(_ field: UInt64, _ value: String) { bytes(field, Array(value.utf8)) }
    mutating func message(_ field: UInt64, _ build: (inout Wire) -> Void) {
        var inner = Wire()
        build(&inner)
        bytes(field, inner.bytes)
    }
}

enum WireSamples {
    static let reader = ReaderID(uuidString: "0E4F1B2A-3C4D-4E5F-8A9B-0C1D2E3F4A5B")!
    static let book = BookID(uuidString: "9A8B7C6D-5E4F-4A3B-9C2D-1E0F2A3B4C5D")!
    static let eventID = EventID(uuidString: "11111111-2222-4333-8444-555555555555")!
    /// 2026-03-01T12:30:00Z
    static let instant: Int64 = 1_772_368_200_000_000

    /// The envelope fields of a StoredEvent (fields 1 ... 6), as a current build writes them.
    static func envelope(type: String, version: UInt64, reader: [UInt8] = WireSamples.reader.bytes,
                         zone: String = "Asia/Seoul") -> Wire {
        var w = Wire()
        w.bytes(1, reader)
        w.sint(2, instant)
        w.string(3, zone)
        w.sint(4, instant + 5_000_000)
        w.string(5, type)
        w.uint(6, version)
        return w
    }

    static func decode(_ bytes: [UInt8], stream: StreamID = .book(reader: reader, book: book))
        throws(EventDecodingError) -> EventEnvelope {
        try BinaryEventCodec.decode(bytes, position: 7, eventID: eventID, stream: stream, streamVersion: 3)
    }
}
