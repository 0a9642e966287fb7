import Foundation
import Testing
@testable import ReadingEvents

/// Issue 10, items 8-10 in the domain: the rules an event keeps on its own (import), string limits
/// in commands and decoders, and conflicts of a repeated event ID.
@Suite struct EnvelopeValidationTests {
    static let reader = ReaderID(), book = BookID()
    static let at = Timestamp(microseconds: 1_740_000_000_000_000)
    static let seoul = try! ZoneID("Asia/Seoul")

    static func envelope(_ event: ReadingEvent, stream: StreamID? = nil, id: EventID = EventID(),
                         occurredAt: Timestamp = at, recordedAt: Timestamp = at) -> EventEnvelope {
        EventEnvelope(eventID: id, stream: stream, reader: reader, occurredAt: occurredAt, timeZone: seoul, recordedAt: recordedAt, event: event)
    }

    static func rule(_ body: () throws -> Void) -> (String, ValidationRule)? {
        do { try body(); return nil } catch let error as ValidationError { return (error.field, error.rule) } catch {
            Issue.record("not a ValidationError: \(error)"); return nil
        }
    }

    @Test func structuralRulesHoldForAnEnvelopeOnItsOwn() {
        let other = BookID()
        let cases: [(EventEnvelope, String, ValidationRule)] = [
            (Self.envelope(.bookLiked(BookLiked(book: Self.book)), stream: .reader(Self.reader)), "stream", .inconsistent),
            (Self.envelope(.profileUpdated(ProfileUpdated(nickname: "n", imageFileName: nil, theme: nil)),
                           stream: .book(reader: Self.reader, book: Self.book)), "stream", .inconsistent),
            (Self.envelope(.bookLiked(BookLiked(book: other)), stream: .book(reader: Self.reader, book: Self.book)), "stream", .inconsistent),
            (Self.envelope(.bookLiked(BookLiked(book: Self.book)), stream: .book(reader: ReaderID(), book: Self.book)), "stream", .inconsistent),
            (Self.envelope(.goalSet(GoalSet(book: Self.book, startDate: LocalDate(dayNumber: 20_000), targetDate: LocalDate(dayNumber: 19_999), theme: nil))),
             "targetDate", .targetBeforeStart),
            (Self.envelope(.bookLiked(BookLiked(book: Self.book)), occurredAt: Self.at.adding(seconds: 1)), "occurredAt", .inconsistent),
            (Self.envelope(.statusChanged(ReadingStatusChanged(book: Self.book, status: .finished))), "status", .malformed),
            (Self.envelope(.unknown(UnknownEvent(type: "PagesRead", schemaVersion: 1, payload: []))), "type", .inconsistent),
            (Self.envelope(.unknown(UnknownEvent(type: "Bad tag\u{1B}", schemaVersion: 1, payload: []))), "type", .malformed),
        ]
        for (envelope, field, rule) in cases {
            let got = Self.rule { try envelope.validate() }
            #expect(got?.0 == field && got?.1 == rule, "\(envelope.event): \(String(describing: got))")
        }
        #expect(Self.rule { try Self.envelope(.pagesRead(PagesRead(book: Self.book, position: 301))).validate(pageCount: 300) }?.1 == .outOfRange)
        #expect(Self.rule { try Self.envelope(.pagesRead(PagesRead(book: Self.book, position: 300))).validate(pageCount: 300) } == nil)
        #expect(Self.rule { try Self.envelope(.unknown(UnknownEvent(type: "ShelfRenamed", schemaVersion: 1, payload: [1]))).validate() } == nil)
    }

    @Test func everyStringFieldHasALimitInCommandsAndDecoders() throws {
        let long = { (n: Int) in String(repeating: "가", count: n + 1) }
        let state = BookState()
        let metadataCases: [(BookMetadata, String)] = [
            (BookMetadata(title: "T", authors: long(Limits.authorsLength)), "metadata.authors"),
            (BookMetadata(title: "T", subtitle: long(Limits.subtitleLength)), "metadata.subtitle"),
            (BookMetadata(title: "T", publisher: long(Limits.publisherLength)), "metadata.publisher"),
            (BookMetadata(title: "T", categoryPath: long(Limits.categoryPathLength)), "metadata.categoryPath"),
            (BookMetadata(title: "T", coverURL: long(Limits.urlLength)), "metadata.coverURL"),
            (BookMetadata(title: "T", productLink: long(Limits.urlLength)), "metadata.productLink"),
        ]
        for (metadata, field) in metadataCases {
            let got = Self.rule { _ = try BookCommand.addBook(metadata).decide(for: Self.book, in: state, at: Self.at) }
            #expect(got?.0 == field && got?.1 == .tooLong, "\(field): \(String(describing: got))")
        }
        let theme = Theme(rawValue: long(Limits.themeLength))
        #expect(Self.rule { _ = try BookCommand.setGoal(startDate: LocalDate(dayNumber: 1), targetDate: LocalDate(dayNumber: 2), theme: theme)
            .decide(for: Self.book, in: {
                var s = BookState(); s.apply(.bookAdded(BookAdded(book: Self.book, metadata: BookMetadata(title: "T"), status: .reading)), occurredAt: Self.at)
                return s }(), at: Self.at) }?.0 == "theme")
        #expect(Self.rule { _ = try ReaderCommand.updateProfile(nickname: "n", imageFileName: long(Limits.imageFileNameLength), theme: nil)
            .decide(in: ReaderState()) }?.0 == "imageFileName")
        // Decoders: the same limits, named under data.
        let profile = Self.envelope(.profileUpdated(ProfileUpdated(nickname: "n", imageFileName: long(Limits.imageFileNameLength), theme: nil)))
        do {
            _ = try JSONEventCodec.decode(JSONEventCodec.encode(profile))
            Issue.record("a long image file name decoded")
        } catch {
            #expect(error.field == "data.imageFileName" && error.rule == .tooLong, "\(error)")
        }
        let record = BinaryEventCodec.encode(profile)
        do {
            _ = try BinaryEventCodec.decode(record, position: 1, eventID: profile.eventID, stream: profile.stream, streamVersion: 1)
            Issue.record("a long image file name decoded from binary")
        } catch {
            #expect(error.field == "data.imageFileName" && error.rule == .tooLong, "\(error)")
        }
        let tag = Self.envelope(.unknown(UnknownEvent(type: "T" + String(repeating: "x", count: Limits.typeTagLength), schemaVersion: 1, payload: [])))
        do {
            _ = try JSONEventCodec.decode(JSONEventCodec.encode(tag))
            Issue.record("a 101-byte type tag decoded")
        } catch {
            #expect(error.field == "type" && error.rule == .tooLong, "\(error)")
        }
    }

    @Test func aRepeatedEventIDMustCarryTheSameFact() throws {
        let id = EventID()
        let added = Self.envelope(.bookAdded(BookAdded(book: Self.book, metadata: BookMetadata(title: "T", pageCount: 100), status: .reading)))
        let first = Self.envelope(.pagesRead(PagesRead(book: Self.book, position: 10)), id: id)
        var same = first
        same.position = 42; same.streamVersion = 7   // assigned by each store: not content
        let other = Self.envelope(.pagesRead(PagesRead(book: Self.book, position: 11)), id: id)
        try RecordedBatch.check([added, first, same])
        #expect(throws: RecordedEventRejection(index: 2, eventID: id, reason: .conflictsWithBatch(index: 1))) {
            try RecordedBatch.check([added, first, other])
        }
        var stored = first
        stored.position = 9
        #expect(throws: RecordedEventRejection(index: 0, eventID: id, reason: .conflictsWithStored(position: 9))) {
            try RecordedBatch.check([other], stored: { $0 == id ? stored : nil })
        }
        // Page counts: from the batch, else the store.
        let beyond = Self.envelope(.pagesRead(PagesRead(book: Self.book, position: 101)))
        #expect(throws: RecordedEventRejection.self) { try RecordedBatch.check([added, beyond]) }
        #expect(throws: RecordedEventRejection.self) { try RecordedBatch.check([beyond], storedPageCount: { _, _ in 100 }) }
        try RecordedBatch.check([beyond])
    }
}
