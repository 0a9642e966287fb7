import Foundation
import ReadingEvents
import Testing
@testable import ReadingEvents

@Suite("Values")
struct ValueTests {
    @Test(arguments: ["9788936433598", "978-89-364-3359-8", "9780306406157"])
    func validISBNs(text: String) throws {
        #expect(try ISBN13(text).digits.count == 13)
    }

    @Test func badCheckDigitIsRejected() {
        do { _ = try ISBN13("9788936433599"); Issue.record("accepted") } catch {
            #expect(error.field == "isbn13" && error.rule == .badCheckDigit)
            #expect(error.detail.contains("check digit is 8"))
        }
    }

    @Test(arguments: ["978893643359", "97889364335981", "97889364335X8", ""])
    func malformedISBNsAreRejected(text: String) {
        do { _ = try ISBN13(text); Issue.record("accepted \(text)") } catch {
            #expect(error.field == "isbn13" && error.rule == .malformed)
        }
    }

    @Test(arguments: ["Asia/Seoul", "America/Los_Angeles", "America/New_York", "Pacific/Kiritimati", "UTC", "Asia/Kolkata"])
    func knownZones(identifier: String) throws {
        #expect(try ZoneID(identifier).identifier == identifier)
    }

    @Test(arguments: ["Mars/Olympus_Mons", "", "Asia/Seou", "asia/seoul", "GMT+9"])
    func unknownZonesAreRejected(identifier: String) {
        do { _ = try ZoneID(identifier); Issue.record("accepted \(identifier)") } catch {
            #expect(error.field == "timeZone" && error.rule == .unknownTimeZone)
            #expect(error.detail.contains("not an IANA time zone identifier"))
        }
    }

    @Test func commandContextRejectsUnknownZoneAndExtremeYears() throws {
        let reader = ReaderID()
        let event = ReadingEvent.bookLiked(BookLiked(book: BookID()))
        let now = Timestamp(iso8601: "2026-03-01T12:00:00Z")!
        #expect(try CommandContext(reader: reader, occurredAt: now, timeZone: "Asia/Seoul").envelopes(for: [event]).count == 1)
        do { _ = try CommandContext(reader: reader, occurredAt: now, timeZone: "Nowhere/City").envelopes(for: [event]); Issue.record("accepted") } catch {
            #expect(error.field == "timeZone" && error.rule == .unknownTimeZone)
        }
        for text in ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"] {
            do {
                _ = try CommandContext(reader: reader, occurredAt: Timestamp(iso8601: text)!, timeZone: "UTC").envelopes(for: [event])
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.field == "occurredAt" && error.rule == .outOfRange)
            }
        }
    }

    @Test func derivedEventIDsAreDistinctAndStable() {
        let context = CommandContext(reader: ReaderID(), occurredAt: Timestamp(microseconds: 0), timeZone: "UTC")
        let ids = (0..<300).map { context.eventID(at: $0) }
        #expect(Set(ids).count == 300)
        #expect(ids[0] == context.commandID)
        #expect(context.eventID(at: 7) == context.eventID(at: 7))
    }

    @Test func localDateArithmetic() throws {
        #expect(LocalDate(dayNumber: 0).description == "1970-01-01")
        #expect(try LocalDate(iso: "2024-02-29").adding(days: 1).description == "2024-03-01")
        #expect(try LocalDate(iso: "2026-12-31").dayNumber - (try LocalDate(iso: "2026-01-01").dayNumber) == 364)
        for n in stride(from: -719_162, through: 2_932_896, by: 997) {   // 0001-01-01 ... 9999-12-31
            let date = LocalDate(dayNumber: n)
            #expect(date.dayNumber == n)
            #expect(try LocalDate(iso: date.description) == date)
        }
        do { _ = try LocalDate(iso: "2026-02-29", field: "targetDate"); Issue.record("accepted") } catch {
            #expect(error.field == "targetDate" && error.rule == .outOfRange)
        }
    }

    @Test func timestampISOFormsRoundTrip() {
        let t = Timestamp(iso8601: "2026-03-01T23:50:00+09:00")!
        #expect(t.description == "2026-03-01T14:50:00.000000Z")
        #expect(Timestamp(iso8601: t.description) == t)
        #expect(Timestamp(iso8601: "1969-12-31T23:59:59.5Z")!.microseconds == -500_000)
        #expect(Timestamp(iso8601: "2026-03-01 12:00:00Z") == nil)
        #expect(Timestamp(iso8601: "2026-13-01T12:00:00Z") == nil)
        var rng = SplitMix64(seed: 7)
        for _ in 0..<2000 {
            let t = Timestamp(microseconds: Int64(bitPattern: rng.next()) % 50_000_000_000_000_000)
            #expect(Timestamp(iso8601: t.description) == t)
        }
    }
}

@Suite("Identifiers")
struct IdentifierTests {
    @Test func orderIsTheBytesOrder() {
        // Pairs that share a first word often (the second word decides), and equal pairs.
        var rng = SplitMix64(seed: 13)
        func id(_ bytes: [UInt8]) -> BookID { BookID(UUID(bytes: bytes)!) }
        for round in 0..<3000 {
            let a = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var b = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if round % 3 == 0 { b.replaceSubrange(0..<8, with: a[0..<8]) }
            if round % 7 == 0 { b = a }
            if round % 5 == 0 { b[Int.random(in: 0..<16, using: &rng)] = a[0] }
            #expect((id(a) < id(b)) == a.lexicographicallyPrecedes(b), "\(a) \(b)")
            #expect((id(b) < id(a)) == b.lexicographicallyPrecedes(a), "\(b) \(a)")
        }
    }

    @Test func canonicalParsingAgreesWithFoundation() {
        var rng = SplitMix64(seed: 11)
        for _ in 0..<500 {
            let id = BookID(UUID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) })!)
            #expect(BookID(uuidString: id.description) == id)
            #expect(BookID(uuidString: id.uuid.uuidString) == id)
        }
        for bad in ["", "not-a-uuid", "E621E1F8-C36C-495A-93FC-0C247A3E6E5", "E621E1F8xC36C-495A-93FC-0C247A3E6E5F",
                    "G621E1F8-C36C-495A-93FC-0C247A3E6E5F", "E621E1F8-C36C-495A-93FC-0C247A3E6E5F0"] {
            #expect(BookID(uuidString: bad) == nil, "\(bad)")
        }
    }

    @Test func orderingFollowsTheBytes() {
        var rng = SplitMix64(seed: 12)
        let ids = (0..<200).map { _ in ReaderID(UUID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) })!) }
        #expect(ids.sorted().map(\.bytes) == ids.map(\.bytes).sorted { $0.lexicographicallyPrecedes($1) })
    }
}

@Suite("Stream names")
struct StreamNameTests {
    @Test func streamNamesRoundTrip() {
        var rng = SplitMix64(seed: 13)
        func uuid() -> UUID { UUID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) })! }
        for _ in 0..<300 {
            let book = StreamID.book(reader: ReaderID(uuid()), book: BookID(uuid()))
            let reader = StreamID.reader(ReaderID(uuid()))
            #expect(StreamID(book.description) == book)
            #expect(StreamID(reader.description) == reader)
            // Upper-case names take the slow path and mean the same stream.
            #expect(StreamID(book.description.uppercased().replacingOccurrences(of: "BOOK", with: "book")) == book)
        }
        for bad in ["", "book:", "reader:x", "book:\(UUID().uuidString)", "shelf:\(UUID().uuidString)",
                    "book:\(UUID().uuidString):\(UUID().uuidString):extra", "reader:\(UUID().uuidString)x"] {
            #expect(StreamID(bad) == nil, "\(bad)")
        }
    }
}
