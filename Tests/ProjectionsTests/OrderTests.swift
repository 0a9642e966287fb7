import Testing
import ReadingEvents
@testable import Projections

/// The home list's orders and category groups, and unknown events that change nothing else.
@Suite("Orders and unknown events")
struct OrderTests {
    let animalFarm = BookID(), dune = BookID(), humanActs = BookID(), vegetarian = BookID()
    let noGoal = BookID(), finished = BookID(), uncategorised = BookID()

    func history() throws -> History {
        var h = History(zone: "Asia/Seoul")
        let books: [(BookID, String, String?)] = [
            (vegetarian, "채식주의자", "국내도서>소설/시/희곡>한국소설"),
            (dune, "Dune", "외국도서>Fiction>Science Fiction"),
            (humanActs, "소년이 온다", "국내도서>소설/시/희곡>한국소설"),
            (animalFarm, "Animal Farm", "외국도서>Fiction>Classics"),
            (uncategorised, "Zettel", nil),
        ]
        for (k, (id, title, category)) in books.enumerated() {
            try h.run(.addBook(aladinMetadata(title: title, category: category), status: .reading), book: id, at: "2026-08-01T09:0\(k):00+09:00")
            try h.run(.setGoal(startDate: date("2026-08-01"), targetDate: date("2026-08-31"), theme: nil), book: id, at: "2026-08-01T09:1\(k):00+09:00")
        }
        // Not on the home list: no goal, and a finished goal book.
        try h.run(.addBook(aladinMetadata(title: "AAA no goal"), status: .wantToRead), book: noGoal, at: "2026-08-01T09:20:00+09:00")
        try h.run(.addBook(aladinMetadata(title: "AAA finished"), status: .reading), book: finished, at: "2026-08-01T09:21:00+09:00")
        try h.run(.setGoal(startDate: date("2026-08-01"), targetDate: date("2026-08-31"), theme: nil), book: finished, at: "2026-08-01T09:22:00+09:00")
        try h.run(.recordPages(position: 300), book: finished, at: "2026-08-01T21:00:00+09:00")
        try h.run(.finishBook(on: date("2026-08-01")), book: finished, at: "2026-08-01T21:01:00+09:00")
        // Activity, latest last: Zettel's goal at 09:14; 소년이 온다 read 08-02 10:00; Dune 08-02 11:00;
        // 채식주의자 08-02 12:00; Animal Farm 08-02 13:00.
        try h.run(.recordPages(position: 10), book: humanActs, at: "2026-08-02T10:00:00+09:00")
        try h.run(.recordPages(position: 10), book: dune, at: "2026-08-02T11:00:00+09:00")
        try h.run(.recordPages(position: 10), book: vegetarian, at: "2026-08-02T12:00:00+09:00")
        try h.run(.recordPages(position: 10), book: animalFarm, at: "2026-08-02T13:00:00+09:00")
        // The reader's own order names two books (and the finished one, which is not listed).
        try h.run(.setHomeOrder([vegetarian, finished, dune]), at: "2026-08-02T14:00:00+09:00")
        return h
    }

    @Test func homeListOrders() throws {
        let h = try history()
        let store = try h.fold()
        func order(_ sort: HomeSort) throws -> [BookID] {
            try store.homeList(reader: h.reader, asOf: instant("2026-08-03T09:00:00+09:00"), zone: zone("Asia/Seoul"), sortedBy: sort).items.map(\.book)
        }
        // By title (Unicode order: Latin before Hangul; 소 U+C18C before 채 U+CC44).
        #expect(try order(.titleAscending) == [animalFarm, dune, uncategorised, humanActs, vegetarian])
        #expect(try order(.titleDescending) == [vegetarian, humanActs, uncategorised, dune, animalFarm])
        // Latest activity first: Animal Farm 13:00, 채식주의자 12:00, Dune 11:00, 소년이 온다 10:00, Zettel 08-01 09:14.
        #expect(try order(.recentActivity) == [animalFarm, vegetarian, dune, humanActs, uncategorised])
        // The reader's order first (채식주의자, Dune; the finished book is skipped), then the rest by title.
        #expect(try order(.readerOrder) == [vegetarian, dune, animalFarm, uncategorised, humanActs])
    }

    @Test func homeListGroupsByCategory() throws {
        let h = try history()
        let list = try h.fold().homeList(reader: h.reader, asOf: instant("2026-08-03T09:00:00+09:00"), zone: zone("Asia/Seoul"))
        // The second level of the path; "" without a path; groups by name, items in the chosen order.
        let groups = list.byCategory
        #expect(groups.map(\.category) == ["", "Fiction", "소설/시/희곡"])
        #expect(groups.map { $0.items.map(\.book) } == [[uncategorised], [animalFarm, dune], [humanActs, vegetarian]])
    }

    @Test func unknownEventsAreCountedAndChangeNothingElse() throws {
        // Two logs with the same known events at the same positions; the second also holds three unknown
        // events (written by a newer build) at positions the first leaves unused.
        let known = try history()
        let unknown = ReadingEvent.unknown(UnknownEvent(type: "BookLent", schemaVersion: 1, payload: [0x0A, 0x03, 0x61, 0x62, 0x63]))
        var plain = History(reader: known.reader, zone: "Asia/Seoul")
        var mixed = History(reader: known.reader, zone: "Asia/Seoul")
        for (k, e) in known.envelopes.enumerated() {
            if [3, 10, known.envelopes.count - 1].contains(k) {
                plain.skipPositions(1)
                mixed.append(unknown, at: "2026-08-02T15:00:00+09:00")
            }
            let at = e.occurredAt.description
            plain.append(e.event, at: at, zone: e.timeZone.identifier)
            mixed.append(e.event, at: at, zone: e.timeZone.identifier)
        }
        let a = try plain.fold()
        let b = try mixed.fold()
        #expect(try b.readerView(reader: known.reader)?.unknownEvents == 3)
        #expect(try a.readerView(reader: known.reader)?.unknownEvents == 0)
        #expect(try b.readerView(reader: known.reader)?.eventCount == known.envelopes.count + 3)
        // Everything else is identical.
        var expected = a
        var readerView = try #require(try expected.readerView(reader: known.reader))
        readerView.unknownEvents = 3
        readerView.eventCount += 3
        try expected.putReaderView(reader: known.reader, readerView)
        #expect(expected == b)
        #expect(try b.homeList(reader: known.reader, asOf: instant("2026-08-03T09:00:00+09:00"), zone: zone("Asia/Seoul"), sortedBy: .readerOrder)
                == a.homeList(reader: known.reader, asOf: instant("2026-08-03T09:00:00+09:00"), zone: zone("Asia/Seoul"), sortedBy: .readerOrder))
        #expect(try b.summary(reader: known.reader) == a.summary(reader: known.reader))
        // An unknown event of a reader with nothing else still leaves a count behind.
        var stranger = History(zone: "Europe/Berlin")
        stranger.append(unknown, at: "2026-08-02T15:00:00+02:00")
        let c = try stranger.fold()
        #expect(try c.readerView(reader: stranger.reader)?.unknownEvents == 1)
        #expect(try c.bookViews(reader: stranger.reader).isEmpty)
        #expect(try c.summary(reader: stranger.reader).totalPages == 0)
    }
}
