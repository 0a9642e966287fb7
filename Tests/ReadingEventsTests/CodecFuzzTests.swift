import Foundation
import PropertyBased
import Testing
@testable import ReadingEvents

/// Arbitrary and damaged input: the decoders throw typed errors (their signatures allow nothing
/// else), never trap, and whatever they do accept is a valid event that round-trips.
@Suite struct CodecFuzzTests {
    static let stream = StreamID.book(reader: WireSamples.reader, book: WireSamples.book)

    /// Decodes with the binary codec; when it succeeds, the result must survive a round trip.
    static func binaryAcceptsOnlyConsistentData(_ bytes: [UInt8]) {
        do {
            let envelope = try BinaryEventCodec.decode(bytes, position: 1, eventID: WireSamples.eventID,
                                                       stream: stream, streamVersion: 1)
            let again = try BinaryEventCodec.decode(BinaryEventCodec.encode(envelope), position: 1,
                                                    eventID: WireSamples.eventID, stream: stream, streamVersion: 1)
            #expect(again == envelope)
        } catch {
            #expect(!error.field.isEmpty)
            #expect(!error.detail.isEmpty)
        }
    }

    static func jsonAcceptsOnlyConsistentData(_ line: [UInt8]) {
        do {
            let envelope = try JSONEventCodec.decode(line)
            #expect(try JSONEventCodec.decode(JSONEventCodec.encode(envelope)) == envelope)
        } catch {
            #expect(!error.field.isEmpty)
            #expect(!error.detail.isEmpty)
        }
    }

    static func mutate(_ input: [UInt8], _ rng: inout Xoshiro) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            switch Int.random(in: 0..<6, using: &rng) {
            case 0 where !bytes.isEmpty:  // flip a bit
                let i = Int.random(in: bytes.indices, using: &rng)
                bytes[i] ^= 1 << UInt8.random(in: 0...7, using: &rng)
            case 1 where !bytes.isEmpty:  // truncate
                bytes.removeLast(Int.random(in: 1...bytes.count, using: &rng))
            case 2:                       // insert a byte
                bytes.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
            case 3 where !bytes.isEmpty:  // replace a byte
                bytes[Int.random(in: bytes.indices, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            case 4 where bytes.count > 1: // delete a byte
                bytes.remove(at: Int.random(in: bytes.indices, using: &rng))
            default:                      // duplicate a slice
                guard !bytes.isEmpty else { continue }
                let a = Int.random(in: bytes.indices, using: &rng)
                let b = Int.random(in: a...min(bytes.count - 1, a + 20), using: &rng)
                bytes.insert(contentsOf: bytes[a...b], at: Int.random(in: 0...bytes.count, using: &rng))
            }
        }
        return bytes
    }

    @Test func randomBytesToTheBinaryDecoder() {
        var rng = Xoshiro(seed: (41, 42, 43, 44))
        for _ in 0..<3_000 {
            let bytes = (0..<Int.random(in: 0...160, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            Self.binaryAcceptsOnlyConsistentData(bytes)
        }
    }

    @Test func mutatedRecordsToTheBinaryDecoder() {
        var rng = Xoshiro(seed: (45, 46, 47, 48))
        var rejected = 0
        for _ in 0..<4_000 {
            var envelope = CodecSamples.envelope(&rng)
            envelope.stream = envelope.event.stream(for: envelope.reader)
            let mutated = Self.mutate(BinaryEventCodec.encode(envelope), &rng)
            do {
                let decoded = try BinaryEventCodec.decode(mutated, position: envelope.position, eventID: envelope.eventID,
                                                          stream: envelope.stream, streamVersion: envelope.streamVersion)
                let again = try BinaryEventCodec.decode(BinaryEventCodec.encode(decoded), position: decoded.position,
                                                        eventID: decoded.eventID, stream: decoded.stream,
                                                        streamVersion: decoded.streamVersion)
                #expect(again == decoded)
            } catch {
                rejected += 1
                #expect(!error.field.isEmpty)
            }
        }
        // Most damage is caught by the value checks (a checksum in the store catches the rest).
        #expect(rejected > 1_000)
    }

    @Test func mutatedRecordsToTheRecordDecoder() {
        var rng = Xoshiro(seed: (49, 50, 51, 52))
        for _ in 0..<2_000 {
            let mutated = Self.mutate(BinaryEventCodec.encodeRecord(CodecSamples.envelope(&rng)), &rng)
            do {
                let decoded = try BinaryEventCodec.decodeRecord(mutated)
                #expect(try BinaryEventCodec.decodeRecord(BinaryEventCodec.encodeRecord(decoded)) == decoded)
            } catch {
                #expect(!error.field.isEmpty)
            }
        }
    }

    @Test func randomBytesToTheJSONDecoder() {
        var rng = Xoshiro(seed: (53, 54, 55, 56))
        let alphabet = Array(#"{}[]":,0123456789.-+eE truefalsnl\"#.utf8) + [0xEA, 0xB0, 0x80, 0xFF]
        for _ in 0..<2_000 {
            let line = (0..<Int.random(in: 0...80, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
            Self.jsonAcceptsOnlyConsistentData(line)
        }
    }

    @Test func mutatedLinesToTheJSONDecoder() {
        var rng = Xoshiro(seed: (57, 58, 59, 60))
        for _ in 0..<3_000 {
            Self.jsonAcceptsOnlyConsistentData(Self.mutate(JSONEventCodec.encode(CodecSamples.envelope(&rng)), &rng))
        }
    }

    /// Structured damage: every key of a valid line, in turn, removed or given a value of another kind.
    @Test func everyKeyWithAWrongValue() throws {
        var rng = Xoshiro(seed: (61, 62, 63, 64))
        let replacements: [Any] = [NSNull(), "text", -1, 1.5, true, [1], ["a": 1], "", 99_999_999_999_999]
        for kind in CodecSamples.Kind.allCases {
            let envelope = CodecSamples.envelope(with: CodecSamples.event(kind, &rng), &rng)
            let object = try JSONSerialization.jsonObject(with: Data(JSONEventCodec.encode(envelope))) as! [String: Any]
            var paths: [[String]] = object.keys.map { [$0] }
            if let data = object["data"] as? [String: Any] { paths += data.keys.map { ["data", $0] } }
            for path in paths {
                for replacement in [nil] + replacements.map(Optional.some) {
                    var copy = object
                    if path.count == 1 {
                        copy[path[0]] = replacement
                    } else {
                        var data = copy["data"] as! [String: Any]
                        data[path[1]] = replacement
                        copy["data"] = data
                    }
                    let line = try JSONSerialization.data(withJSONObject: copy)
                    Self.jsonAcceptsOnlyConsistentData(Array(line))
                }
            }
        }
    }
}
