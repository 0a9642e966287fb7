import Foundation
import PropertyBased
import Testing
@testable import ReadingEvents

/// `JSONEventCodec.encodeData`, what `replay audit` prints for an event: the `data` object of the
/// event's export line, byte for byte, encoded once (no round trip through the whole line).
@Suite struct JSONEventDataTests {
    @Test func theDataOfEveryKindIsTheDataObjectOfItsLine() throws {
        var rng = Xoshiro(seed: (81, 82, 83, 84))
        for kind in CodecSamples.Kind.allCases {
            for _ in 0..<40 {
                let envelope = CodecSamples.envelope(with: CodecSamples.event(kind, &rng), &rng)
                let line = JSONEventCodec.encode(envelope)
                let data = try #require(JSONEventCodec.encodeData(envelope.event), "\(kind)")
                // Keys are sorted, so `data` is followed by another key or ends the object.
                let embedded = Array("\"data\":".utf8) + data
                #expect(line.firstRange(of: embedded) != nil, "\(kind): \(String(decoding: data, as: UTF8.self))")
                // And it is one JSON object, the line's own.
                let parsedLine = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? NSDictionary)
                let parsedData = try #require(try JSONSerialization.jsonObject(with: Data(data)) as? NSDictionary)
                #expect(parsedLine["data"] as? NSDictionary == parsedData, "\(kind)")
            }
        }
    }

    @Test func anUnknownEventHasNoData() throws {
        let unknown = ReadingEvent.unknown(UnknownEvent(type: "FutureThing", schemaVersion: 1, payload: [1, 2, 3]))
        #expect(JSONEventCodec.encodeData(unknown) == nil)
    }
}
