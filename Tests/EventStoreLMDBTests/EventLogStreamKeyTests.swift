import Foundation
import LMDB
import ReadingEvents
import TestSupport
import Testing
@testable import EventStoreLMDB

/// The binary stream keys of log format 3: round trips, the one-to-one text form, and decoders
/// that survive arbitrary bytes with typed errors.
@Suite struct EventLogStreamKeyTests {
    static func randomUUID(_ rng: inout SplitMix64) -> UUID {
        UUID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) })!
    }

    static func randomKey(_ rng: inout SplitMix64) -> StreamKey {
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: return StreamKey(.reader(ReaderID(randomUUID(&rng))))
        case 1: return StreamKey(.book(reader: ReaderID(randomUUID(&rng)), book: BookID(randomUUID(&rng))))
        default:
            let alphabet = Array("ab:é-/κ0".unicodeScalars)
            let name = String(String.UnicodeScalarView((0..<Int.random(in: 1...20, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }))
            return StreamKey(name: name)
        }
    }

    static func decode(_ bytes: [UInt8]) throws(StreamKey.DecodingFailure) -> StreamKey {
        try bytes.withUnsafeBytes { raw in Result { () throws(StreamKey.DecodingFailure) in try StreamKey.decode(raw) } }.get()
    }

    @Test func keysRoundTripThroughTheirBytesAndTheirText() throws {
        var rng = SplitMix64(seed: 0x5EED_0003)
        for _ in 0..<2000 {
            let key = Self.randomKey(&rng)
            let bytes = try key.encoded()
            #expect(try Self.decode(bytes) == key)
            // The text form names the same key, and only reading streams have binary keys.
            #expect(StreamKey(name: key.description) == key)
            if let stream = key.streamID {
                #expect(bytes.count == 33)
                #expect(StreamKey(stream) == key)
                switch stream {
                case .reader(let reader): #expect(bytes == [1] + reader.bytes + [UInt8](repeating: 0, count: 16))
                case .book(let reader, let book): #expect(bytes == [2] + reader.bytes + book.bytes)
                }
            } else {
                #expect(bytes == [3, UInt8(key.description.utf8.count >> 8), UInt8(key.description.utf8.count & 0xFF)]
                        + Array(key.description.utf8))
            }
            // Self-delimiting: a key followed by other bytes decodes as its prefix.
            let tail = (0..<Int.random(in: 0...9, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let prefix = try (bytes + tail).withUnsafeBytes { raw in try StreamKey.decodePrefix(of: raw) }
            #expect(prefix.key == key && prefix.count == bytes.count)
        }
        // A reading stream named by a non-canonical text (uppercase UUIDs) is a named stream of its own.
        let reader = ReaderID(Self.randomUUID(&rng))
        #expect(StreamKey(name: "reader:\(reader.uuid.uuidString)").streamID == nil)
        #expect(StreamKey(name: "reader:\(reader)").streamID == .reader(reader))
    }

    @Test func invalidNamesAreRefusedBeforeAnythingIsWritten() throws {
        for name in ["", "a\u{0}b", String(repeating: "x", count: EventLog.maxStreamNameBytes + 1)] {
            #expect(throws: EventStoreError.invalidStreamName(name)) { _ = try StreamKey(name: name).encoded() }
        }
        #expect(try StreamKey(name: String(repeating: "x", count: EventLog.maxStreamNameBytes)).encoded().count
                == 3 + EventLog.maxStreamNameBytes)
    }

    @Test func arbitraryAndDamagedBytesGiveTypedErrorsNeverATrap() throws {
        var rng = SplitMix64(seed: 0x5EED_0004)
        var accepted = 0, refused = 0
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                // A valid key, damaged: a flipped bit, truncated, or a byte inserted.
                bytes = try Self.randomKey(&rng).encoded()
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: bytes[Int.random(in: bytes.indices, using: &rng)] ^= 1 << UInt8.random(in: 0...7, using: &rng)
                case 1: bytes.removeLast(Int.random(in: 1...bytes.count, using: &rng))
                default: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
                }
            } else {
                bytes = [UInt8.random(in: 0...4, using: &rng)]
                    + (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }
            _ = try? bytes.withUnsafeBytes { raw in try StreamIndexKey.decode(raw) }
            let decoded: StreamKey
            do {
                decoded = try Self.decode(bytes)
            } catch {
                #expect(!error.rule.isEmpty)
                refused += 1
                continue
            }
            // What decodes re-encodes to the same bytes: one key, one encoding.
            #expect(try decoded.encoded() == bytes)
            accepted += 1
        }
        #expect(accepted > 0 && refused > 0)
        // An unknown kind and a wrong length are named.
        #expect(throws: StreamKey.DecodingFailure.self) { try Self.decode([9] + [UInt8](repeating: 0, count: 32)) }
        let short = #expect(throws: StreamKey.DecodingFailure.self) { try Self.decode([2] + [UInt8](repeating: 1, count: 31)) }
        #expect(short?.rule.contains("33") == true)
    }

    @Test func aRecordWithABadStreamFieldIsACorruptRecord() throws {
        var rng = SplitMix64(seed: 0x5EED_0005)
        let key = StreamKey(.book(reader: ReaderID(Self.randomUUID(&rng)), book: BookID(Self.randomUUID(&rng))))
        let good = EventRecord.encode(position: 1, streamVersion: 1, eventID: Self.randomUUID(&rng), streamKey: try key.encoded(),
                                      payload: [], prevHash: EventRecord.zeroHash)
        // Unknown kind bytes, and a book key cut short (the payload is empty, so the record ends).
        for kind: UInt8 in [0, 4, 0xFF] {
            var bytes = good
            bytes[53] = kind
            bytes = Self.resealed(bytes)
            let error = #expect(throws: EventStoreError.self) { try bytes.withUnsafeBytes { try EventRecord.decode($0, key: 1) } }
            #expect(error?.description.contains("stream field: unknown kind byte \(kind)") == true)
        }
        let cut = Self.resealed(Array(good.dropLast(5)))
        let error = #expect(throws: EventStoreError.self) { try cut.withUnsafeBytes { try EventRecord.decode($0, key: 1) } }
        #expect(error?.description.contains("needs 33 bytes, found 28") == true)
    }

    /// `bytes` with its checksum recomputed.
    static func resealed(_ bytes: [UInt8]) -> [UInt8] {
        var bytes = bytes
        let crc = CRC32C.checksum(bytes[5...])
        bytes.replaceSubrange(1..<5, with: [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)])
        return bytes
    }
}
