import Foundation
import Testing
import ReadingEvents
@testable import Projections

// Shared helpers of the scenario tests: a `History` builder that stamps envelopes the way the store
// would (positions from 1, stream versions per stream), with instants written as ISO 8601 text with
// their offset ("2026-03-01T23:50:00+09:00") and zones as IANA names.

/// An instant from ISO 8601 text with an offset; traps on a typo, which is a bug in the test.
func instant(_ iso: String) -> Timestamp {
    guard let t = Timestamp(iso8601: iso) else { preconditionFailure("not an ISO 8601 instant: \(iso)") }
    return t
}

/// A date from `YYYY-MM-DD`.
func date(_ iso: String) -> LocalDate { try! LocalDate(iso: iso) }

/// A checked IANA zone.
func zone(_ identifier: String) -> ZoneID { try! ZoneID(identifier) }

/// The pages of a run of daily totals, in order.
func pages(_ days: [(day: LocalDate, total: DayTotal)]) -> [Int] { days.map(\.total.pages) }
/// The seconds of a run of daily totals, in order.
func seconds(_ days: [(day: LocalDate, total: DayTotal)]) -> [Int] { days.map(\.total.seconds) }

/// A range of dates from two `YYYY-MM-DD` texts.
func days(_ from: String, _ to: String) -> ClosedRange<LocalDate> { date(from)...date(to) }

/// Metadata as the Aladin item lookup of the seed apps returns it.
func aladinMetadata(title: String = "채식주의자", pageCount: Int? = 300,
                    category: String? = "국내도서>소설/시/희곡>한국소설") -> BookMetadata {
    BookMetadata(title: title, authors: "한강 (지은이)", publisher: "창비",
                 publicationDate: date("2007-10-30"), isbn13: try! ISBN13("9788936433598"),
                 pageCount: pageCount, categoryPath: category,
                 coverURL: "https://image.aladin.co.kr/product/61/50/cover/8936433598_2.jpg",
                 productLink: "https://www.aladin.co.kr/shop/wproduct.aspx?ItemId=615044")
}

/// A reader's log under construction. Positions are assigned from 1 in append order; stream
/// versions count per stream. `run` goes through the decide step, so the events it appends are
/// ones the package would accept; `append` stores a raw event (unknown events, hand-made cases).
struct History {
    var reader: ReaderID
    var zone: String
    private(set) var envelopes: [EventEnvelope] = []
    private var versions: [StreamID: UInt64] = [:]
    private var nextPosition: UInt64 = 1

    init(reader: ReaderID = ReaderID(), zone: String) {
        self.reader = reader; self.zone = zone
    }

    /// The log position the next append gets.
    var upcomingPosition: UInt64 { nextPosition }

    /// Leaves `count` positions unused (to line up a second log that has extra events there).
    mutating func skipPositions(_ count: UInt64) { nextPosition += count }

    /// Appends one raw event that happened at `at` (ISO 8601 with offset) in `zone` (default: the
    /// history's zone), recorded at `recordedAt` (default: when it happened).
    @discardableResult
    mutating func append(_ event: ReadingEvent, at: String, zone: String? = nil, recordedAt: String? = nil,
                         reader: ReaderID? = nil) -> EventEnvelope {
        let who = reader ?? self.reader
        let stream = event.stream(for: who)
        let version = (versions[stream] ?? 0) + 1
        versions[stream] = version
        let envelope = EventEnvelope(position: nextPosition, stream: stream, streamVersion: version, reader: who,
                                     occurredAt: instant(at), timeZone: try! ZoneID(zone ?? self.zone),
                                     recordedAt: instant(recordedAt ?? at), event: event)
        nextPosition += 1
        envelopes.append(envelope)
        return envelope
    }

    /// The state of one book, folded from this history as the decide step sees it.
    func state(of book: BookID) -> BookState {
        BookState(envelopes: envelopes.filter { $0.stream == .book(reader: reader, book: book) })
    }

    /// Decides `command` for `book` against the history so far and appends what it produces.
    /// Throws the validation error when the package rejects the command.
    @discardableResult
    mutating func run(_ command: BookCommand, book: BookID, at: String, zone: String? = nil,
                      recordedAt: String? = nil) throws -> [ReadingEvent] {
        let events = try command.decide(for: book, in: state(of: book), at: instant(at))
        for event in events { append(event, at: at, zone: zone, recordedAt: recordedAt) }
        return events
    }

    /// Decides a reader command and appends what it produces.
    @discardableResult
    mutating func run(_ command: ReaderCommand, at: String, zone: String? = nil) throws -> [ReadingEvent] {
        var state = ReaderState()
        for e in envelopes where e.stream == .reader(reader) { state.apply(e.event) }
        let events = try command.decide(in: state)
        for event in events { append(event, at: at, zone: zone) }
        return events
    }

    /// Folds the whole history into a fresh in-memory store.
    func fold(dayStartHour: Int = 0) throws -> InMemoryViewStore {
        try History.fold(envelopes, dayStartHour: dayStartHour)
    }

    /// Folds envelopes in order into a fresh in-memory store.
    static func fold(_ envelopes: [EventEnvelope], dayStartHour: Int = 0) throws -> InMemoryViewStore {
        var store = InMemoryViewStore()
        let projector = ReadingProjector(dayStartHour: dayStartHour)
        for envelope in envelopes { try projector.apply(envelope, to: &store) }
        return store
    }
}

/// A deterministic identifier from a generator (so a generated history is the same every run).
func seededID<T>(_ rng: inout SplitMix64, as _: TaggedID<T>.Type = TaggedID<T>.self) -> TaggedID<T> {
    var bytes = [UInt8]()
    for _ in 0..<2 { let v = rng.next(); for k in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * k))) } }
    bytes[6] = (bytes[6] & 0x0F) | 0x40; bytes[8] = (bytes[8] & 0x3F) | 0x80
    return TaggedID<T>(bytes: bytes)!
}
