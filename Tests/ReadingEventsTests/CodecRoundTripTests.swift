import Foundation
import PropertyBased
import Testing
@testable import ReadingEvents

/// encode -> decode gives the original back, for generated envelopes of every event type, in both
/// codecs (and through the stored form, the self-contained record and the JSON line).
@Suite struct CodecRoundTripTests {
    @Test func binaryStoredValueRoundTrips() {
        seeded(CodecSamples.envelopes, count: 3_000, seed: (1, 2, 3, 4)) { envelope in
            let bytes = BinaryEventCodec.encode(envelope)
            let decoded = try BinaryEventCodec.decode(bytes, position: envelope.position, eventID: envelope.eventID,
                                                      stream: envelope.stream, streamVersion: envelope.streamVersion)
            #expect(decoded == envelope)
            // And straight from a borrowed buffer, as the store reads it.
            let fromBuffer = try bytes.withUnsafeBytes { raw throws(EventDecodingError) in
                try BinaryEventCodec.decode(raw, position: envelope.position, eventID: envelope.eventID,
                                            stream: envelope.stream, streamVersion: envelope.streamVersion)
            }
            #expect(fromBuffer == envelope)
            // Stable: encoding the decoded value gives the same bytes.
            #expect(BinaryEventCodec.encode(decoded) == bytes)
        }
    }

    @Test func binaryRecordRoundTrips() {
        seeded(CodecSamples.envelopes, count: 2_000, seed: (5, 6, 7, 8)) { envelope in
            let decoded = try BinaryEventCodec.decodeRecord(BinaryEventCodec.encodeRecord(envelope))
            #expect(decoded == envelope)
        }
    }

    @Test func jsonLineRoundTrips() {
        seeded(CodecSamples.envelopes, count: 2_000, seed: (9, 10, 11, 12)) { envelope in
            let line = JSONEventCodec.encode(envelope)
            #expect(!line.contains(UInt8(ascii: "\n")))
            let decoded = try JSONEventCodec.decode(line)
            #expect(decoded == envelope)
            // Byte-stable: the decoded value encodes to the same line.
            #expect(JSONEventCodec.encode(decoded) == line)
        }
    }

    @Test func binaryAndJSONAgree() {
        seeded(CodecSamples.envelopes, count: 500, seed: (13, 14, 15, 16)) { envelope in
            let viaBinary = try BinaryEventCodec.decodeRecord(BinaryEventCodec.encodeRecord(envelope))
            let viaBoth = try JSONEventCodec.decode(JSONEventCodec.encode(viaBinary))
            #expect(viaBoth == envelope)
        }
    }

    @Test func jsonLinesJoinWithNewlines() throws {
        var rng = Xoshiro(seed: (17, 18, 19, 20))
        let envelopes = (0..<20).map { _ in CodecSamples.envelope(&rng) }
        let text = JSONEventCodec.encodeLines(envelopes)
        let lines = text.split(separator: UInt8(ascii: "\n"))
        #expect(lines.count == 20)
        #expect(text.last == UInt8(ascii: "\n"))
        for (line, envelope) in zip(lines, envelopes) { #expect(try JSONEventCodec.decode(line) == envelope) }
    }

    @Test func propertyCheckWithRandomSeeds() async {
        // A further run with PropertyBased's own random seeds, as a search beyond the fixed ones.
        await propertyCheck(count: 200, input: CodecSamples.envelopes) { envelope in
            let binary = try BinaryEventCodec.decodeRecord(BinaryEventCodec.encodeRecord(envelope))
            let json = try JSONEventCodec.decode(JSONEventCodec.encode(envelope))
            #expect(binary == envelope)
            #expect(json == envelope)
        }
    }
}
