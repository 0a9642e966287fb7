import Foundation
import Testing
@testable import ReadingEvents

/// Typed errors name the field and the rule, in words people can act on.
@Suite struct CodecErrorMessageTests {
    static let pagesLine = """
        {"data":{"book":"9a8b7c6d-5e4f-4a3b-9c2d-1e0f2a3b4c5d","position":120},"eventID":"11111111-2222-4333-8444-555555555555",\
        "occurredAt":"2026-03-01T12:30:00.000000Z","position":7,"reader":"0e4f1b2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b",\
        "recordedAt":"2026-03-01T12:30:05.000000Z","schemaVersion":1,\
        "stream":"book:0e4f1b2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b:9a8b7c6d-5e4f-4a3b-9c2d-1e0f2a3b4c5d","streamVersion":3,\
        "timeZone":"Asia/Seoul","type":"PagesRead"}
        """

    static func jsonError(_ line: String) -> EventDecodingError? {
        do { _ = try JSONEventCodec.decode(line); return nil } catch { return error }
    }

    @Test func theSampleLineDecodes() throws {
        let envelope = try JSONEventCodec.decode(Self.pagesLine)
        #expect(envelope.event == .pagesRead(PagesRead(book: WireSamples.book, position: 120)))
        #expect(envelope.position == 7 && envelope.streamVersion == 3)
    }

    @Test(arguments: [
        (#""position":120"#, #""position":"12""#, "data.position: expected an integer", EventDecodingError.Problem.wrongType),
        (#""position":120"#, #""position":100001"#, "data.position: 100001 is outside 0 ... 100000", .invalid),
        (#""position":7"#, #""position":-7"#, "position: expected a non-negative integer", .wrongType),
        (#""timeZone":"Asia/Seoul""#, #""timeZone":"Mars/Olympus""#,
         #"timeZone: "Mars/Olympus" is not an IANA time zone identifier"#, .invalid),
        (#""occurredAt":"2026-03-01T12:30:00.000000Z""#, #""occurredAt":"yesterday""#,
         #"occurredAt: "yesterday" is not an ISO 8601 instant"#, .invalid),
        (#""occurredAt":"2026-03-01T12:30:00.000000Z""#, #""occurredAt":"1850-01-01T00:00:00Z""#,
         "occurredAt: 1850-01-01T00:00:00.000000Z is outside 1900-01-01 ..< 2200-01-01", .invalid),
        (#""reader":"0e4f1b2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b","#, "", "reader: is required", .missing),
        (#""stream":"book:0e4f1b2a"#, #""stream":"book:1e4f1b2a"#, "stream: stream book:1e4f1b2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b:9a8b7c6d-5e4f-4a3b-9c2d-1e0f2a3b4c5d belongs to another reader than 0e4f1b2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b", .inconsistent),
        (#""book":"9a8b7c6d-5e4f-4a3b-9c2d-1e0f2a3b4c5d","#, #""book":"9a8b7c6d","#,
         #"data.book: "9a8b7c6d" is not a UUID"#, .invalid),
        (#""data":{"#, #""rawPayload":"AAEC","data":{"#, "rawPayload: a PagesRead@1 event carries its payload in data", .inconsistent),
        ("{", "[", "line: the line is not valid JSON", .malformed),
    ] as [(String, String, String, EventDecodingError.Problem)])
    func jsonErrorsNameTheField(original: String, replacement: String, message: String, problem: EventDecodingError.Problem) {
        let line = Self.pagesLine.replacingOccurrences(of: original, with: replacement)
        #expect(line != Self.pagesLine)
        let error = Self.jsonError(line)
        #expect(error?.description == message)
        #expect(error?.problem == problem)
    }

    @Test func jsonRatingAndISBNRules() throws {
        var rng = SystemRandomNumberGenerator()
        var metadata = CodecSamples.metadata(&rng)
        metadata.isbn13 = try ISBN13("9788936434120")
        let envelope = EventEnvelope(reader: WireSamples.reader, occurredAt: Timestamp(microseconds: WireSamples.instant),
                                     timeZone: .utc, recordedAt: Timestamp(microseconds: WireSamples.instant),
                                     event: .bookAdded(BookAdded(book: WireSamples.book, metadata: metadata, status: .reading)))
        let line = JSONEventCodec.encodeLine(envelope)
        let badISBN = Self.jsonError(line.replacingOccurrences(of: "9788936434120", with: "9788936434121"))
        #expect(badISBN?.field == "data.metadata.isbn13")
        #expect(badISBN?.rule == .badCheckDigit)

        let rated = EventEnvelope(reader: WireSamples.reader, occurredAt: Timestamp(microseconds: WireSamples.instant),
                                  timeZone: .utc, recordedAt: Timestamp(microseconds: WireSamples.instant),
                                  event: .ratingSet(RatingSet(book: WireSamples.book, rating: try Rating(quarters: 17))))
        let ratedLine = JSONEventCodec.encodeLine(rated)
        #expect(ratedLine.contains(#""rating":4.25"#))
        let offStep = Self.jsonError(ratedLine.replacingOccurrences(of: "4.25", with: "4.3"))
        #expect(offStep?.field == "data.rating")
        #expect(offStep?.rule == .offQuarterStep)
        let tooHigh = Self.jsonError(ratedLine.replacingOccurrences(of: "4.25", with: "5.25"))
        #expect(tooHigh?.rule == .outOfRange)
    }

    static func binaryError(_ bytes: [UInt8], stream: StreamID = .book(reader: WireSamples.reader, book: WireSamples.book))
        -> EventDecodingError? {
        do { _ = try WireSamples.decode(bytes, stream: stream); return nil } catch { return error }
    }

    static func pagesRecord(reader: [UInt8] = WireSamples.reader.bytes, zone: String = "Asia/Seoul",
                            type: String = "PagesRead", position: Int64 = 120) -> [UInt8] {
        var w = WireSamples.envelope(type: type, version: 1, reader: reader, zone: zone)
        w.message(23) { $0.bytes(1, WireSamples.book.bytes); $0.int(2, position) }
        return w.bytes
    }

    @Test func binaryErrorsNameTheField() throws {
        #expect(try WireSamples.decode(Self.pagesRecord()).event == .pagesRead(PagesRead(book: WireSamples.book, position: 120)))

        let shortReader = Self.binaryError(Self.pagesRecord(reader: Array(WireSamples.reader.bytes.prefix(15))))
        #expect(shortReader?.description == "reader: a UUID has 16 bytes, not 15")
        #expect(Self.binaryError(Self.pagesRecord(reader: []))?.description == "reader: is required")
        #expect(Self.binaryError(Self.pagesRecord(zone: ""))?.field == "timeZone")
        #expect(Self.binaryError(Self.pagesRecord(position: -1))?.description == "data.position: -1 is outside 0 ... 100000")
        #expect(Self.binaryError(Self.pagesRecord(type: "BookLiked"))?.description
                == "type: the type tag is BookLiked but the payload is PagesRead")
        let truncated = Self.binaryError(Array(Self.pagesRecord().dropLast(3)))
        #expect(truncated?.field == "bytes")
        #expect(truncated?.problem == .malformed)
        let otherReader = Self.binaryError(Self.pagesRecord(), stream: .reader(ReaderID()))
        #expect(otherReader?.field == "stream")

        var rating = WireSamples.envelope(type: "RatingSet", version: 2)
        rating.message(40) { $0.bytes(1, WireSamples.book.bytes); $0.int(2, 21) }
        #expect(Self.binaryError(rating.bytes)?.description == "data.rating: 21 quarter stars is outside 1 ... 20 (0.25 ... 5.0 stars)")

        var book = WireSamples.envelope(type: "BookAdded", version: 1)
        book.message(16) { added in
            added.bytes(1, WireSamples.book.bytes)
            added.message(2) { $0.string(1, "채식주의자"); $0.string(6, "9788936434121") }
            added.int(3, 2)
        }
        let isbn = Self.binaryError(book.bytes)
        #expect(isbn?.field == "data.metadata.isbn13")
        #expect(isbn?.rule == .badCheckDigit)
    }
}
