import Foundation
import Testing
@testable import ReadingEvents

/// RatingSet v1 (whole stars) reads as v2 (quarter stars) through the one upcast path, from both
/// codecs; the v1 bytes and lines are built by hand, not by the current encoder.
@Suite struct CodecUpcastTests {
    static func v1Record(rating: Int64) -> [UInt8] {
        var w = WireSamples.envelope(type: "RatingSet", version: 1)
        w.message(39) { v1 in                       // rating_set_v1
            v1.bytes(1, WireSamples.book.bytes)
            v1.int(2, rating)
        }
        return w.bytes
    }

    @Test(arguments: 1...5)
    func binaryV1BecomesV2(stars: Int) throws {
        let envelope = try WireSamples.decode(Self.v1Record(rating: Int64(stars)))
        #expect(envelope.type == .ratingSet)
        #expect(envelope.type.schemaVersion == 2)
        #expect(envelope.event == .ratingSet(RatingSet(book: WireSamples.book, rating: try Rating(quarters: stars * 4))))
        #expect(envelope.occurredAt == Timestamp(microseconds: WireSamples.instant))
        #expect(envelope.timeZone.identifier == "Asia/Seoul")
        // Re-encoding writes the current version.
        let reread = try WireSamples.decode(BinaryEventCodec.encode(envelope))
        #expect(reread == envelope)
        #expect(BinaryEventCodec.encode(envelope) != Self.v1Record(rating: Int64(stars)))
    }

    @Test(arguments: [0, 6, -1, Int64.max, Int64.min])
    func binaryV1OutOfRangeIsATypedError(stars: Int64) {
        #expect(throws: EventDecodingError.self) { try WireSamples.decode(Self.v1Record(rating: stars)) }
        do {
            _ = try WireSamples.decode(Self.v1Record(rating: stars))
        } catch {
            #expect(error.field == "data.rating")
            #expect(error.rule == .outOfRange)
        }
    }

    @Test func binaryV1PayloadUnderV2VersionIsInconsistent() {
        var w = WireSamples.envelope(type: "RatingSet", version: 2)
        w.message(39) { $0.bytes(1, WireSamples.book.bytes); $0.int(2, 4) }
        #expect(throws: EventDecodingError.self) { try WireSamples.decode(w.bytes) }
        do { _ = try WireSamples.decode(w.bytes) } catch { #expect(error.field == "schemaVersion") }
    }

    static let v1Line = """
        {"data":{"book":"9a8b7c6d-5e4f-4a3b-9c2d-1e0f2a3b4c5d","rating":4},"eventID":"11111111-2222-4333-8444-555555555555",\
        "occurredAt":"2026-03-01T12:30:00.000000Z","position":7,"reader":"0e4f1b2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b",\
        "recordedAt":"2026-03-01T12:30:05.000000Z","schemaVersion":1,\
        "stream":"book:0e4f1b2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b:9a8b7c6d-5e4f-4a3b-9c2d-1e0f2a3b4c5d","streamVersion":3,\
        "timeZone":"Asia/Seoul","type":"RatingSet"}
        """

    @Test func jsonV1BecomesV2() throws {
        let envelope = try JSONEventCodec.decode(Self.v1Line)
        #expect(envelope.event == .ratingSet(RatingSet(book: WireSamples.book, rating: try Rating(quarters: 16))))
        #expect(envelope.type.schemaVersion == 2)
        // The binary v1 record and the JSON v1 line read as the same event.
        #expect(try WireSamples.decode(Self.v1Record(rating: 4)) == envelope)
        // Exported again, it is a v2 line with stars.
        let line = JSONEventCodec.encodeLine(envelope)
        #expect(line.contains(#""schemaVersion":2"#))
        #expect(line.contains(#""rating":4"#))
    }

    @Test func jsonV1WithFractionalStarsIsATypedError() {
        let line = Self.v1Line.replacingOccurrences(of: #""rating":4"#, with: #""rating":4.5"#)
        do {
            _ = try JSONEventCodec.decode(line)
            Issue.record("decoded")
        } catch {
            #expect(error.description == "data.rating: expected an integer")
        }
    }

    @Test func upcasterChecksTagAndVersion() throws {
        let v1 = RatingSetV1(book: WireSamples.book, rating: 3)
        #expect(try EventUpcaster.upcast(type: "RatingSet", schemaVersion: 1, payload: .ratingSetV1(v1))
                == .ratingSet(RatingSet(book: WireSamples.book, rating: try Rating(quarters: 12))))
        #expect(throws: EventDecodingError.self) {
            try EventUpcaster.upcast(type: "PagesRead", schemaVersion: 1, payload: .ratingSetV1(v1))
        }
        let pages = ReadingEvent.pagesRead(PagesRead(book: WireSamples.book, position: 10))
        #expect(try EventUpcaster.upcast(type: "PagesRead", schemaVersion: 1, payload: .event(pages)) == pages)
        #expect(throws: EventDecodingError.self) {
            try EventUpcaster.upcast(type: "PagesRead", schemaVersion: 2, payload: .event(pages))
        }
        #expect(throws: EventDecodingError.self) {
            try EventUpcaster.upcast(type: "BookLiked", schemaVersion: 1, payload: .event(pages))
        }
    }
}
