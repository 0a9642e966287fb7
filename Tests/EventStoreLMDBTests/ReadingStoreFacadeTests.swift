import Foundation
import TestSupport
import Projections
import ReadingEvents
import Testing
@testable import EventStoreLMDB
import LMDB

/// The host-facing facade in one process: execute, validation, retries, reader scoping, the
/// audit trail and change notifications.
struct ReadingStoreFacadeTests {
    typealias F = Facade

    static let metadata = BookMetadata(
        title: "채식주의자", authors: "한강 (지은이)", publisher: "창비", publicationDate: try! LocalDate(iso: "2007-10-30"),
        isbn13: try! ISBN13("9788936433598"), pageCount: 300, categoryPath: "국내도서>소설/시/희곡>한국소설",
        coverURL: "https://image.aladin.co.kr/product/32/36/cover/8936433598_1.jpg")

    // MARK: 1. execute gives the views of the fold

    @Test func bookyBookyFlowThroughExecuteMatchesTheInMemoryFoldOfTheStoredEvents() throws {
        try withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("store"))
            let reader = ReaderID()
            let book = BookID()
            func run(_ command: BookCommand, _ time: String) throws {
                let envelopes = try store.execute(command, book: book, context: F.context(reader, time))
                #expect(envelopes.count == 1, "\(command)")
                #expect(envelopes.allSatisfy { $0.position > 0 && $0.stream == .book(reader: reader, book: book) })
            }
            try run(.addBook(Self.metadata, status: .wantToRead), "2025-03-03T08:00:00+09:00")
            try run(.setGoal(startDate: F.day("2025-03-03"), targetDate: F.day("2025-03-09"), theme: "orange"), "2025-03-03T08:01:00+09:00")
            try run(.recordPages(position: 40), "2025-03-03T22:00:00+09:00")
            try run(.recordPages(position: 100), "2025-03-04T23:10:00+09:00")
            // 00:30 in Seoul is still 3/4 in UTC: the day must come from the event's zone.
            try run(.recordPages(position: 130), "2025-03-05T00:30:00+09:00")
            let session = SessionID()
            try run(.startSession(session), "2025-03-05T21:00:00+09:00")
            try run(.finishSession(session, endPosition: 200, durationSeconds: 2_700), "2025-03-05T21:45:00+09:00")
            try run(.collectSentence(SentenceID(), text: "나는 이제 동물이 아니야, 언니.", page: 150), "2025-03-05T21:50:00+09:00")
            try run(.collectSentence(SentenceID(), text: "꿈을 꿨어.", page: 180), "2025-03-05T21:51:00+09:00")

            // Before finishing: the home list, persisted and folded in memory, as of 3/5 22:00 in Seoul.
            let asOf = F.at("2025-03-05T22:00:00+09:00")
            let home = try store.withViews { try $0.homeList(reader: reader, asOf: asOf, zone: F.seoul) }
            #expect(home == (try F.inMemoryViews(of: store).homeList(reader: reader, asOf: asOf, zone: F.seoul)))
            #expect(home.today == F.day("2025-03-05"))
            #expect(home.items.count == 1)
            let item = try #require(home.items.first)
            #expect(item.book == book && item.metadata == Self.metadata)
            #expect(item.position == 200 && item.pagesLeft == 100 && item.daysLeft == 4)
            #expect(item.pagesPerDayNeeded == 20)       // 100 pages over 3/5 ... 3/9
            #expect(item.progress == 200.0 / 300.0)

            try run(.recordPages(position: 300), "2025-03-06T20:00:00+09:00")
            try run(.finishBook(on: F.day("2025-03-06")), "2025-03-06T20:05:00+09:00")
            try run(.setRating(stars: 4.5), "2025-03-06T20:06:00+09:00")
            try run(.like, "2025-03-06T20:07:00+09:00")

            let memory = try F.inMemoryViews(of: store)
            let end = F.at("2025-03-06T23:00:00+09:00")
            let days = F.day("2025-03-01")...F.day("2025-03-10")
            try store.withViews { views in
                try F.expectSameQueries(views, memory, reader: reader, asOf: end, zone: F.seoul, days: days)
                // Spot checks by hand.
                #expect(try views.homeList(reader: reader, asOf: end, zone: F.seoul).items.isEmpty)
                let shelf = try views.bookshelf(reader: reader, showing: .finished)
                #expect(shelf.items.count == 1)
                #expect(shelf.items.first?.goalMet == true)      // finished 3/6, target 3/9
                #expect(shelf.items.first?.rating == (try Rating(stars: 4.5)))
                #expect(shelf.items.first?.finishes == [F.day("2025-03-06")])
                #expect(shelf.items.first?.liked == true)
                #expect(abs(shelf.stackHeightMillimetres - 300 * 0.06) < 1e-9)
                let daily = try views.dailyPages(reader: reader, in: F.day("2025-03-02")...F.day("2025-03-07"))
                #expect(daily.map(\.total.pages) == [0, 40, 60, 100, 100, 0])
                #expect(daily.map(\.total.seconds) == [0, 0, 0, 2_700, 0, 0])
                let streaks = try views.streaks(reader: reader, asOf: F.day("2025-03-06"))
                #expect(streaks.current == StreakRun(start: F.day("2025-03-03"), end: F.day("2025-03-06")))
                #expect(streaks.longestLength == 4)
                let summary = try views.summary(reader: reader)
                #expect(summary.finished == 1 && summary.reading == 0 && summary.liked == 1)
                #expect(summary.totalPages == 300 && summary.totalSeconds == 2_700)
                let detail = try #require(try views.bookDetail(reader: reader, book: book))
                #expect(detail.view.sentences.map(\.page) == [150, 180])
                #expect(detail.view.sessions.count == 1)
            }
            #expect(try store.viewCheckpoint() == store.log.lastPosition())
            #expect(try store.log.lastPosition() == 13)
        }
    }

    // MARK: 2. a rejected command writes nothing

    @Test func rejectedCommandsThrowValidationErrorsAndLeaveTheFilesByteIdentical() throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            let store = try ReadingStore.open(at: url)
            let reader = ReaderID()
            let book = BookID()
            try store.execute(.addBook(Self.metadata, status: .reading), book: book, context: F.context(reader, "2025-03-03T08:00:00+09:00"))
            try store.execute(.recordPages(position: 50), book: book, context: F.context(reader, "2025-03-03T22:00:00+09:00"))
            let last = try store.log.lastPosition()
            let digest = try store.viewDigest()

            let rejected: [(BookCommand, String, String, ValidationRule)] = [
                (.recordPages(position: 301), "Asia/Seoul", "position", .outOfRange),        // above the page count
                (.recordPages(position: -1), "Asia/Seoul", "position", .outOfRange),
                (.recordPages(position: 60), "Mars/Olympus_Mons", "timeZone", .unknownTimeZone),
                (.setRating(stars: 4.3), "Asia/Seoul", "rating", .offQuarterStep),
                (.addBook(Self.metadata, status: .reading), "Asia/Seoul", "book", .bookAlreadyAdded),
                (.finishSession(SessionID(), endPosition: nil, durationSeconds: 60), "Asia/Seoul", "session", .sessionNotStarted),
            ]
            for (command, zone, field, rule) in rejected {
                let before = try snapshot(of: url)
                let error = #expect(throws: ValidationError.self, "\(command) in \(zone)") {
                    try store.execute(command, book: book, context: F.context(reader, "2025-03-04T21:00:00+09:00", zone: zone))
                }
                #expect(error?.field == field, "\(command)")
                #expect(error?.rule == rule, "\(command)")
                // Compared before any other read: the whole directory, lock.mdb included.
                #expect(try snapshot(of: url) == before, "\(command) changed the store's files")
                #expect(try store.log.lastPosition() == last)
            }
            // A rejected reader command too.
            let duplicate = BookID()
            let before = try snapshot(of: url)
            let error = #expect(throws: ValidationError.self) {
                try store.execute(ReaderCommand.setHomeOrder([duplicate, book, duplicate]), context: F.context(reader, "2025-03-04T21:00:00+09:00"))
            }
            #expect(error?.field == "books" && error?.rule == .duplicateElement)
            #expect(try snapshot(of: url) == before)

            #expect(try store.log.lastPosition() == last)
            #expect(try store.viewCheckpoint() == last)
            #expect(try store.viewDigest() == digest)
            #expect(try store.withViews { try $0.bookView(reader: reader, book: book)?.position } == 50)
        }
    }

    // MARK: 3. retries are idempotent

    @Test func retryingACommandReturnsTheStoredEnvelopesAndAppendsNothing() throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            let reader = ReaderID()
            let book = BookID()
            let add = F.context(reader, "2025-03-03T08:00:00+09:00")
            let pages = F.context(reader, "2025-03-03T22:00:00+09:00")
            let finish = F.context(reader, "2025-03-04T22:00:00+09:00")
            var first: [[EventEnvelope]] = []
            do {
                let store = try ReadingStore.open(at: url)
                first.append(try store.execute(.addBook(Self.metadata, status: .wantToRead), book: book, context: add))
                // From want-to-read, a page record is one PagesRead event: the status change to
                // reading is implied by the fold, not a second event.
                first.append(try store.execute(.recordPages(position: 300), book: book, context: pages))
                first.append(try store.execute(.finishBook(on: F.day("2025-03-04")), book: book, context: finish))
                #expect(first.map(\.count) == [1, 1, 1])
                guard case .pagesRead = first[1].first?.event else { Issue.record("expected PagesRead"); return }
                #expect(try store.withViews { try $0.bookView(reader: reader, book: book)?.status } == .finished)

                let last = try store.log.lastPosition()
                let digest = try store.viewDigest()
                // Retried in the same process: same envelopes (positions included), nothing appended.
                #expect(try store.execute(.addBook(Self.metadata, status: .wantToRead), book: book, context: add) == first[0])
                #expect(try store.execute(.recordPages(position: 300), book: book, context: pages) == first[1])
                #expect(try store.execute(.finishBook(on: F.day("2025-03-04")), book: book, context: finish) == first[2])
                #expect(try store.log.lastPosition() == last)
                #expect(try store.viewDigest() == digest)
                // A new finish (another command ID) is rejected: only the retry is accepted.
                #expect(throws: ValidationError.self) {
                    try store.execute(.finishBook(on: F.day("2025-03-04")), book: book, context: F.context(reader, "2025-03-04T22:00:00+09:00"))
                }
            }
            // After a crash or a lost reply: retried by a new process (reopened store).
            let store = try ReadingStore.open(at: url)
            let last = try store.log.lastPosition()
            #expect(try store.execute(.finishBook(on: F.day("2025-03-04")), book: book, context: finish) == first[2])
            #expect(try store.execute(.addBook(Self.metadata, status: .wantToRead), book: book, context: add) == first[0])
            #expect(try store.log.lastPosition() == last)
            #expect(try store.events() == first.flatMap { $0 })
        }
    }

    /// No BookCommand decides more than one event today, so a two-event command is stored the way
    /// execute would have stored it (event IDs `commandID`, `eventID(at: 1)`), and the retry must
    /// return both.
    @Test func retryingAMultiEventCommandReturnsAllOfItsEvents() throws {
        try withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("store"))
            let reader = ReaderID()
            let book = BookID()
            let context = F.context(reader, "2025-03-03T08:00:00+09:00")
            let events: [ReadingEvent] = [
                .bookAdded(BookAdded(book: book, metadata: Self.metadata, status: .wantToRead)),
                .goalSet(GoalSet(book: book, startDate: F.day("2025-03-03"), targetDate: F.day("2025-03-09"), theme: nil)),
            ]
            #expect(try store.appendRecorded(try context.envelopes(for: events)) == 2)
            let stored = try store.events()
            #expect(stored.map(\.eventID) == [context.eventID(at: 0), context.eventID(at: 1)])
            let retried = try store.execute(.addBook(Self.metadata, status: .wantToRead), book: book, context: context)
            #expect(retried == stored)
            #expect(try store.log.lastPosition() == 2)
        }
    }

    // MARK: 9. reader scoping

    @Test func queriesAndTheAuditTrailOfOneReaderHoldNothingOfAnother() throws {
        try withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("store"))
            let alice = ReaderID()
            let bob = ReaderID()
            let aliceBook = BookID()
            let bobBook = BookID()
            let shared = BookID()      // the same book ID in both libraries (the same edition)
            func a(_ command: BookCommand, _ book: BookID, _ time: String) throws {
                try store.execute(command, book: book, context: F.context(alice, time))
            }
            func b(_ command: BookCommand, _ book: BookID, _ time: String) throws {
                try store.execute(command, book: book, context: F.context(bob, time, zone: "America/New_York"))
            }
            var other = Self.metadata
            other.title = "소년이 온다"
            try a(.addBook(Self.metadata, status: .reading), aliceBook, "2025-03-01T08:00:00+09:00")
            try b(.addBook(other, status: .reading), bobBook, "2025-03-01T08:00:00-05:00")
            try a(.addBook(other, status: .reading), shared, "2025-03-01T08:05:00+09:00")
            try b(.addBook(other, status: .reading), shared, "2025-03-01T08:05:00-05:00")
            try a(.setGoal(startDate: F.day("2025-03-01"), targetDate: F.day("2025-03-20"), theme: nil), aliceBook, "2025-03-01T08:10:00+09:00")
            try b(.setGoal(startDate: F.day("2025-03-01"), targetDate: F.day("2025-03-30"), theme: nil), bobBook, "2025-03-01T08:10:00-05:00")
            try b(.setGoal(startDate: F.day("2025-03-01"), targetDate: F.day("2025-03-30"), theme: nil), shared, "2025-03-01T08:11:00-05:00")
            // Alice reads on 3/2 and 3/3; Bob on 3/4 ... 3/6, more pages, and finishes and likes.
            try a(.recordPages(position: 10), aliceBook, "2025-03-02T21:00:00+09:00")
            try a(.recordPages(position: 25), aliceBook, "2025-03-03T21:00:00+09:00")
            for (offset, position) in [100, 200, 300].enumerated() {
                try b(.recordPages(position: position), bobBook, "2025-03-0\(4 + offset)T21:00:00-05:00")
            }
            try b(.recordPages(position: 77), shared, "2025-03-06T22:00:00-05:00")
            try b(.finishBook(on: F.day("2025-03-06")), bobBook, "2025-03-06T22:30:00-05:00")
            try b(.like, bobBook, "2025-03-06T22:31:00-05:00")
            try b(.setRating(stars: 3), bobBook, "2025-03-06T22:32:00-05:00")
            try store.execute(ReaderCommand.setHomeOrder([shared, bobBook]), context: F.context(bob, "2025-03-06T23:00:00-05:00", zone: "America/New_York"))
            try store.execute(ReaderCommand.updateProfile(nickname: "앨리스", imageFileName: nil, theme: nil), context: F.context(alice, "2025-03-06T23:00:00+09:00"))

            let asOf = F.at("2025-03-07T12:00:00+09:00")
            let days = F.day("2025-02-25")...F.day("2025-03-10")
            try store.withViews { views in
                #expect(Set(try views.readers()) == [alice, bob])
                #expect(Set(try views.bookViews(reader: alice).map(\.book)) == [aliceBook, shared])
                #expect(try views.bookViews(reader: alice).allSatisfy { $0.reader == alice })
                for sort in HomeSort.allCases {
                    #expect(Set(try views.homeList(reader: alice, asOf: asOf, zone: F.seoul, sortedBy: sort).items.map(\.book)) == [aliceBook])
                }
                #expect(try views.bookView(reader: alice, book: shared)?.position == 0)
                #expect(try views.bookView(reader: bob, book: shared)?.position == 77)
                #expect(try views.bookshelf(reader: alice, showing: .finished).items.isEmpty)
                #expect(try views.bookshelf(reader: alice, showing: .liked).items.isEmpty)
                #expect(try views.bookshelf(reader: bob, showing: .finished).items.map(\.book) == [bobBook])
                let daily = try views.dailyPages(reader: alice, in: days).filter { !$0.total.isZero }
                #expect(daily.map(\.day) == [F.day("2025-03-02"), F.day("2025-03-03")])
                #expect(daily.map(\.total.pages) == [10, 15])
                #expect(try views.dailyPages(reader: alice, book: shared, in: days).allSatisfy { $0.total.isZero })
                #expect(try views.calendarMonth(reader: alice, month: YearMonth(year: 2025, month: 3)).reduce(0) { $0 + $1.total.pages } == 25)
                #expect(try views.monthly(reader: alice, in: YearMonth(year: 2025, month: 3)...YearMonth(year: 2025, month: 3)).map(\.total)
                        == [MonthTotal(pages: 25, finishes: 0)])
                #expect(try views.timeOfDay(reader: alice).pages.reduce(0, +) == 25)
                #expect(try views.streaks(reader: alice, asOf: F.day("2025-03-06")).longest == StreakRun(start: F.day("2025-03-02"), end: F.day("2025-03-03")))
                #expect(try views.streakRuns(reader: alice).count == 1)
                let summary = try views.summary(reader: alice)
                #expect(summary.finished == 0 && summary.liked == 0 && summary.reading == 2 && summary.totalPages == 25)
                #expect(try views.openSessions(reader: alice).isEmpty)
                #expect(try views.readerView(reader: alice)?.homeOrder.isEmpty != false)
                #expect(try views.readerView(reader: alice)?.nickname == "앨리스")
                #expect(try views.readerView(reader: bob)?.nickname == nil)
                #expect(try views.readerView(reader: alice)?.eventCount == 6)
                // The in-memory fold agrees for both readers.
                let memory = try F.inMemoryViews(of: store)
                for reader in [alice, bob] {
                    try F.expectSameQueries(views, memory, reader: reader, asOf: asOf, zone: F.seoul, days: days)
                }
            }

            let all = try store.events()
            for reader in [alice, bob] {
                let trail = try store.auditTrail(reader: reader)
                #expect(!trail.isEmpty)
                #expect(trail == all.filter { $0.reader == reader })
                #expect(trail.map(\.position) == trail.map(\.position).sorted())
                #expect(trail.allSatisfy { $0.stream.reader == reader })
                let sharedTrail = try store.auditTrail(reader: reader, book: shared)
                #expect(sharedTrail == all.filter { $0.stream == .book(reader: reader, book: shared) })
            }
            #expect(try store.auditTrail(reader: alice).count + store.auditTrail(reader: bob).count == all.count)
            #expect(try store.auditTrail(reader: ReaderID()).isEmpty)
        }
    }

    /// Events appended by another writer (here through the raw log) and folded by a rebuild must
    /// reach the reader index too: the audit trail is part of what a rebuild makes consistent.
    @Test func eventsFoldedByARebuildAppearInTheAuditTrail() throws {
        try withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("store"))
            let reader = ReaderID()
            let book = BookID()
            try store.execute(.addBook(Self.metadata, status: .reading), book: book, context: F.context(reader, "2025-03-03T08:00:00+09:00"))
            // Another writer (an older build, `replay import` of a raw log) appends without folding.
            let raw = try F.context(reader, "2025-03-03T22:00:00+09:00")
                .envelopes(for: [.pagesRead(PagesRead(book: book, position: 42))])[0]
            try store.log.append(NewEvent(eventID: raw.eventID.uuid, payload: BinaryEventCodec.encode(raw)), to: raw.stream.description)
            #expect(try store.viewCheckpoint() == 1)
            let report = try store.rebuild()
            #expect(report.events == 2)
            #expect(try store.viewCheckpoint() == 2)
            #expect(try store.withViews { try $0.bookView(reader: reader, book: book)?.position } == 42)
            #expect(try store.auditTrail(reader: reader).map(\.position) == [1, 2])
            // And the next execute does not fold it a second time.
            try store.execute(.recordPages(position: 50), book: book, context: F.context(reader, "2025-03-04T22:00:00+09:00"))
            #expect(try store.withViews { try $0.dailyPages(reader: reader, in: F.day("2025-03-03")...F.day("2025-03-04")).map(\.total.pages) } == [42, 8])
            #expect(try store.auditTrail(reader: reader).map(\.position) == [1, 2, 3])
        }
    }

    // MARK: 10. changes(for:)

    @Test func changesForAReaderDeliverItsNewPositionsAndNoneOfAnotherReader() async throws {
        try await withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("store"))
            let alice = ReaderID()
            let bob = ReaderID()
            let aliceBook = BookID()
            let bobBook = BookID()
            // History before the subscription is not delivered (changes start at lastPosition).
            try store.execute(.addBook(Self.metadata, status: .reading), book: aliceBook, context: F.context(alice, "2025-03-01T08:00:00+09:00"))
            try store.execute(.addBook(Self.metadata, status: .reading), book: bobBook, context: F.context(bob, "2025-03-01T08:00:00+09:00"))

            let collected = Locked<[UInt64]>([])
            let changes = try store.changes(for: alice)
            let consumer = Task {
                for try await position in changes { collected.withLock { $0.append(position) } }
            }
            var expected: [UInt64] = []
            for index in 1...6 {
                let time = "2025-03-0\(1 + index)T21:00:00+09:00"
                expected += try store.execute(.recordPages(position: index * 10), book: aliceBook, context: F.context(alice, time)).map(\.position)
                try store.execute(.recordPages(position: index * 20), book: bobBook, context: F.context(bob, time))
            }
            // Bob's events after Alice's last one must not arrive either.
            try store.execute(.like, book: bobBook, context: F.context(bob, "2025-03-08T21:00:00+09:00"))
            let bobPositions = Set(try store.auditTrail(reader: bob).map(\.position))
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(10)
            while collected.withLock({ $0.count }) < expected.count && clock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            try await Task.sleep(for: .milliseconds(300))   // time for a stray delivery of Bob's last event
            consumer.cancel()
            _ = await consumer.result
            let seen = collected.withLock { $0 }
            #expect(seen == expected)
            #expect(seen.allSatisfy { !bobPositions.contains($0) })
            #expect(expected.count == 6 && expected.allSatisfy { $0 > 2 })
        }
    }
}
