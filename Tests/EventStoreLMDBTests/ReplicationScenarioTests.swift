import DemoHistory
import Foundation
import Projections
import ReadingEvents
import Testing
import TestSupport
@testable import EventStoreLMDB

#if canImport(Glibc)
import Glibc
#endif

/// Two devices of one reader (real stores in one temp directory) with fixed replica IDs, so the
/// canonical order of every scenario is known in advance: stamps follow `recordedAt` (the hybrid
/// clock only moves them when a device already holds a later stamp), and replica A sorts before B
/// at equal stamps.
struct Devices {
    typealias F = Facade
    static let replicaA = ReplicaID(UUID(uuidString: "A0000000-0000-4000-8000-000000000001")!)
    static let replicaB = ReplicaID(UUID(uuidString: "B0000000-0000-4000-8000-000000000002")!)
    static let metadata = BookMetadata(title: "채식주의자", authors: "한강 (지은이)", pageCount: 300)

    let a: ReadingStore
    let b: ReadingStore
    let reader = ReaderID(UUID(uuidString: "00000000-0000-4000-8000-0000000000AA")!)
    let book = BookID(UUID(uuidString: "00000000-0000-4000-8000-0000000000B1")!)
    let other = BookID(UUID(uuidString: "00000000-0000-4000-8000-0000000000B2")!)

    init(_ dir: TempDirectory) throws {
        a = try ReadingStore.open(at: dir.child("a"), replica: Self.replicaA)
        b = try ReadingStore.open(at: dir.child("b"), replica: Self.replicaB)
    }

    /// Executes a book command on `store` at `time` (Seoul), recorded at `recorded` (default: the
    /// same instant); expects it to append exactly one event.
    @discardableResult
    func run(_ store: ReadingStore, _ command: BookCommand, _ time: String, recorded: String? = nil, book: BookID? = nil,
             sourceLocation: SourceLocation = #_sourceLocation) throws -> EventEnvelope? {
        let context = CommandContext(reader: reader, occurredAt: F.at(time), timeZone: "Asia/Seoul",
                                     recordedAt: recorded.map(F.at), commandID: EventID())
        let events = try store.execute(command, book: book ?? self.book, context: context)
        #expect(events.count == 1, "\(command) at \(time)", sourceLocation: sourceLocation)
        return events.first
    }

    /// Executes a reader command on `store` at `time` (Seoul).
    func run(_ store: ReadingStore, _ command: ReaderCommand, _ time: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let events = try store.execute(command, context: F.context(reader, time))
        #expect(events.count == 1, "\(command) at \(time)", sourceLocation: sourceLocation)
    }

    /// Delivers what `to` lacks from `from` (one merge); returns the merge result.
    @discardableResult
    static func deliver(from: ReadingStore, to: ReadingStore) throws -> MergeResult {
        try to.merge(try from.changes(since: try to.versionVector()))
    }

    /// Both ways (B's events to A, then A's to B); returns how many events moved.
    @discardableResult
    func sync() throws -> Int {
        try Self.deliver(from: b, to: a).appended + Self.deliver(from: a, to: b).appended
    }

    /// The book's view on `store`.
    func view(_ store: ReadingStore, book: BookID? = nil) throws -> BookView? {
        try store.withViews { try $0.bookView(reader: reader, book: book ?? self.book) }
    }

    /// Pages per day on `store` from 3/1 to 3/10, 2025.
    func pages(_ store: ReadingStore, _ range: ClosedRange<String> = "2025-03-01"..."2025-03-10") throws -> [Int] {
        try store.withViews { try $0.dailyPages(reader: reader, in: F.day(range.lowerBound)...F.day(range.upperBound)).map(\.total.pages) }
    }

    /// Reading seconds per day on `store` from 3/1 to 3/10, 2025.
    func seconds(_ store: ReadingStore) throws -> [Int] {
        try store.withViews { try $0.dailyPages(reader: reader, in: F.day("2025-03-01")...F.day("2025-03-10")).map(\.total.seconds) }
    }

    /// Both devices converged: equal version vectors and view digests, equal to each device's
    /// fresh fold of its log and to the reference fold of the union.
    func expectConverged(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try Self.expectConverged([a, b], sourceLocation: sourceLocation)
    }

    static func expectConverged(_ stores: [ReadingStore], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let digests = try stores.map { try $0.viewDigest() }
        #expect(Set(digests).count == 1, "view digests differ", sourceLocation: sourceLocation)
        #expect(Set(try stores.map { try $0.versionVector() }).count == 1, "version vectors differ", sourceLocation: sourceLocation)
        for store in stores {
            #expect(try store.freshFoldDigest() == digests[0], "a fresh fold differs from the views", sourceLocation: sourceLocation)
        }
        var views = InMemoryViewStore()
        // One copy per event (the identity rule): the copy whose origin sorts first.
        let copies = Dictionary(grouping: try stores[0].changes(since: VersionVector(), limit: .max), by: \.eventID)
        let union = copies.values.map { $0.min { $0.origin! < $1.origin! }! }
        try ReadingProjector(dayStartHour: stores[0].dayStartHour).fold(union, into: &views)
        #expect(try ViewDigest.of(views) == digests[0], "the reference fold of the union differs", sourceLocation: sourceLocation)
    }
}

/// One hand-worked scenario per conflict rule of the Replication article, and the merge API's
/// guarantees (late events, all-or-nothing, paging, quiescence, a kill during a merge).
///
/// Times are in Seoul (+09:00); "3/3" is 2025-03-03. The book has 300 pages. Every scenario
/// adds the book on A at 3/3 08:00 and syncs before the devices go their own ways.
struct ReplicationScenarioTests {
    typealias F = Facade
    typealias D = Devices

    func setUp(_ dir: TempDirectory) throws -> Devices {
        let d = try Devices(dir)
        try d.run(d.a, .addBook(D.metadata, status: .reading), "2025-03-03T08:00:00+09:00")
        #expect(try d.sync() == 1)
        return d
    }

    // MARK: Page marks

    /// A records page 50 at 3/3 20:00, B (offline) page 80 at 21:00. Marks in time order: 50, 80;
    /// credits 50 and 80 - 50 = 30. So 3/3 shows 80 pages (not 50 + 80 = 130), the book is at 80,
    /// and both devices agree.
    @Test func twoDevicesRecordingTheSameDayCreditTheHigherMarkOnce() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            try d.run(d.a, .recordPages(position: 50), "2025-03-03T20:00:00+09:00")
            try d.run(d.b, .recordPages(position: 80), "2025-03-03T21:00:00+09:00")
            #expect(try d.sync() == 2)
            for store in [d.a, d.b] {
                #expect(try d.pages(store) == [0, 0, 80, 0, 0, 0, 0, 0, 0, 0])
                let view = try #require(try d.view(store))
                #expect(view.position == 80)
                #expect(view.entries.map(\.credited) == [50, 30])
                #expect(try store.withViews { try $0.summary(reader: d.reader).totalPages } == 80)
            }
            try d.expectConverged()
        }
    }

    /// The higher mark earlier in time: B records page 80 at 3/3 20:00, A (offline, still at 0)
    /// page 50 at 21:00. Marks in time order: 80, 50; credits 80 and max(0, 50 - 80) = 0. So 3/3
    /// shows 80 pages, and the higher mark wins: the book is at page 80, not 50, and a page
    /// record of 90 on either device afterwards is accepted and credits 10.
    @Test func aLowerMarkRecordedLaterOnAnotherDeviceDoesNotMoveTheBookBack() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            try d.run(d.b, .recordPages(position: 80), "2025-03-03T20:00:00+09:00")
            try d.run(d.a, .recordPages(position: 50), "2025-03-03T21:00:00+09:00")
            #expect(try d.sync() == 2)
            for store in [d.a, d.b] {
                #expect(try d.pages(store) == [0, 0, 80, 0, 0, 0, 0, 0, 0, 0])
                let view = try #require(try d.view(store))
                #expect(view.entries.map(\.credited) == [80, 0])
                #expect(view.position == 80, "the higher mark wins")
            }
            try d.expectConverged()
            try d.run(d.a, .recordPages(position: 90), "2025-03-03T22:00:00+09:00")
            #expect(try d.sync() == 1)
            #expect(try d.pages(d.b) == [0, 0, 90, 0, 0, 0, 0, 0, 0, 0])
            #expect(try d.view(d.b)?.position == 90)
            try d.expectConverged()
        }
    }

    // MARK: Finishes

    /// A finishes on 3/6 (pages at 300 first); B sees it and undoes it at 3/6 21:00; A, still
    /// offline with the finish, rates the book at 21:30. Canonical order: finish, undo, rating.
    /// So the book is not finished (status reading, no finishes), March counts 0 finishes, and
    /// the rating 4.5 stays.
    @Test func aFinishOnOneDeviceUndoneOnAnother() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            try d.run(d.a, .recordPages(position: 300), "2025-03-05T21:00:00+09:00")
            try d.run(d.a, .finishBook(on: F.day("2025-03-06")), "2025-03-06T20:00:00+09:00")
            #expect(try d.sync() == 2)
            try d.run(d.b, .undoFinish, "2025-03-06T21:00:00+09:00")
            try d.run(d.a, .setRating(stars: 4.5), "2025-03-06T21:30:00+09:00")
            #expect(try d.sync() == 2)
            for store in [d.a, d.b] {
                let view = try #require(try d.view(store))
                #expect(!view.isFinished && view.status == .reading && view.finishes.isEmpty)
                #expect(view.rating == (try Rating(stars: 4.5)))
                let march = try store.withViews { try $0.monthly(reader: d.reader, in: YearMonth(year: 2025, month: 3)...YearMonth(year: 2025, month: 3)) }
                #expect(march.map(\.total.finishes) == [0])
                #expect(try store.withViews { try $0.summary(reader: d.reader).finished } == 0)
            }
            try d.expectConverged()
        }
    }

    /// Both devices finish the same read-through offline: A on 3/6 (at 3/6 20:00), B on 3/7
    /// (at 3/7 09:00). Canonical order: A's finish, then B's, which finds the read-through
    /// finished and is ignored: one finish (3/6), March counts 1. Then B undoes it (3/7 10:00):
    /// no finish, March counts 0 (not -1, not 1).
    @Test func twoFinishesOfOneReadThroughCountOnce() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            try d.run(d.a, .recordPages(position: 300), "2025-03-05T21:00:00+09:00")
            #expect(try d.sync() == 1)
            try d.run(d.a, .finishBook(on: F.day("2025-03-06")), "2025-03-06T20:00:00+09:00")
            try d.run(d.b, .finishBook(on: F.day("2025-03-07")), "2025-03-07T09:00:00+09:00")
            #expect(try d.sync() == 2)
            let march = YearMonth(year: 2025, month: 3)...YearMonth(year: 2025, month: 3)
            for store in [d.a, d.b] {
                #expect(try d.view(store)?.finishes == [F.day("2025-03-06")])
                #expect(try store.withViews { try $0.monthly(reader: d.reader, in: march).map(\.total.finishes) } == [1])
            }
            try d.expectConverged()
            try d.run(d.b, .undoFinish, "2025-03-07T10:00:00+09:00")
            #expect(try d.sync() == 1)
            for store in [d.a, d.b] {
                #expect(try d.view(store)?.finishes == [])
                #expect(try d.view(store)?.isFinished == false)
                #expect(try store.withViews { try $0.monthly(reader: d.reader, in: march).map(\.total.finishes) } == [0])
            }
            try d.expectConverged()
        }
    }

    // MARK: Sessions

    /// A starts a timer at 3/5 21:00; B (after a sync) finishes it at 21:45 at page 120. The
    /// session is closed by B's finish: 45 min = 2,700 s on 3/5, 120 pages on 3/5, no open
    /// session on either device.
    @Test func anOpenSessionClosedOnAnotherDevice() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            let session = SessionID()
            try d.run(d.a, .startSession(session), "2025-03-05T21:00:00+09:00")
            #expect(try d.sync() == 1)
            #expect(try d.b.withViews { try $0.openSessions(reader: d.reader).count } == 1)
            try d.run(d.b, .finishSession(session, endPosition: 120, durationSeconds: 2_700), "2025-03-05T21:45:00+09:00")
            #expect(try d.sync() == 1)
            for store in [d.a, d.b] {
                #expect(try d.seconds(store) == [0, 0, 0, 0, 2_700, 0, 0, 0, 0, 0])
                #expect(try d.pages(store) == [0, 0, 0, 0, 120, 0, 0, 0, 0, 0])
                #expect(try store.withViews { try $0.openSessions(reader: d.reader) }.isEmpty)
                #expect(try d.view(store)?.sessions.map(\.isFinished) == [true])
            }
            try d.expectConverged()
        }
    }

    /// The first closing event in canonical order decides a session. Case 1: a timer started on A
    /// at 3/5 21:00 (synced); A discards it at 21:40, B (offline) finishes it at 21:45. The
    /// discard comes first: the session is gone, 0 s count. Case 2: a timer started on A at 3/6
    /// 21:00 (synced); B finishes it at 21:30; A (offline, the timer still open there) pauses it
    /// at 21:35 and discards it at 21:40. Order: start, B's finish, A's pause, A's discard: the
    /// finish decides (21:00 ... 21:30 = 1,800 s on 3/6, one interval); the pause and the
    /// discard are ignored.
    @Test func theFirstClosingEventOfASessionDecidesIt() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            let first = SessionID(), second = SessionID()
            try d.run(d.a, .startSession(first), "2025-03-05T21:00:00+09:00")
            #expect(try d.sync() == 1)
            try d.run(d.a, .discardSession(first), "2025-03-05T21:40:00+09:00")
            try d.run(d.b, .finishSession(first, endPosition: nil, durationSeconds: 2_700), "2025-03-05T21:45:00+09:00")
            #expect(try d.sync() == 2)
            for store in [d.a, d.b] {
                #expect(try d.seconds(store) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
                #expect(try d.view(store)?.sessions.isEmpty == true)
                #expect(try store.withViews { try $0.openSessions(reader: d.reader) }.isEmpty)
            }
            try d.expectConverged()

            try d.run(d.a, .startSession(second), "2025-03-06T21:00:00+09:00")
            #expect(try d.sync() == 1)
            try d.run(d.b, .finishSession(second, endPosition: nil, durationSeconds: 1_800), "2025-03-06T21:30:00+09:00")
            try d.run(d.a, .pauseSession(second), "2025-03-06T21:35:00+09:00")
            try d.run(d.a, .discardSession(second), "2025-03-06T21:40:00+09:00")
            #expect(try d.sync() == 3)
            for store in [d.a, d.b] {
                #expect(try d.seconds(store) == [0, 0, 0, 0, 0, 1_800, 0, 0, 0, 0])
                let sessions = try #require(try d.view(store)?.sessions)
                #expect(sessions.map(\.session) == [second] && sessions.map(\.isFinished) == [true])
                #expect(sessions.first?.intervals.count == 1, "the later pause adds no interval")
            }
            try d.expectConverged()
        }
    }

    /// A finish that is not a session's first closing event still states a page: its end position
    /// is a page mark. Session 1 (3/5): A starts at 21:00 (synced), A discards it at 21:40, B
    /// (offline) finishes it at 21:45 at page 120. The discard decides the timer (0 seconds), but
    /// the reader reached page 120: 3/5 shows 120 pages. Session 2 (3/6): A starts at 21:00
    /// (synced); A finishes at 21:30 at page 150 (1,800 s), B (offline) finishes at 21:50 at page
    /// 200 (2,400 s reported). The first finish decides the timer: 1,800 s on 3/6; both end
    /// positions are marks: 150 - 120 = 30, then 200 - 150 = 50, so 3/6 shows 80 pages and the book
    /// is at 200.
    @Test func anEndPositionCountsWhateverBecameOfTheTimer() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            let first = SessionID(), second = SessionID()
            try d.run(d.a, .startSession(first), "2025-03-05T21:00:00+09:00")
            #expect(try d.sync() == 1)
            try d.run(d.a, .discardSession(first), "2025-03-05T21:40:00+09:00")
            try d.run(d.b, .finishSession(first, endPosition: 120, durationSeconds: 2_700), "2025-03-05T21:45:00+09:00")
            #expect(try d.sync() == 2)
            try d.run(d.a, .startSession(second), "2025-03-06T21:00:00+09:00")
            #expect(try d.sync() == 1)
            try d.run(d.a, .finishSession(second, endPosition: 150, durationSeconds: 1_800), "2025-03-06T21:30:00+09:00")
            try d.run(d.b, .finishSession(second, endPosition: 200, durationSeconds: 2_400), "2025-03-06T21:50:00+09:00")
            #expect(try d.sync() == 2)
            for store in [d.a, d.b] {
                #expect(try d.pages(store) == [0, 0, 0, 0, 120, 80, 0, 0, 0, 0])
                #expect(try d.seconds(store) == [0, 0, 0, 0, 0, 1_800, 0, 0, 0, 0])
                #expect(try d.view(store)?.position == 200)
            }
            try d.expectConverged()
        }
    }

    // MARK: Sentences and memos

    /// A collects a sentence at 3/5 21:50 (synced). Case 1: B removes it at 21:55, A (offline)
    /// edits it at 22:00: the edit comes after the removal and is ignored. Case 2 (a second
    /// sentence): A edits it at 22:10, B removes it at 22:20: removed. Removal wins either way:
    /// no sentence on either device. The same for a memo (edited after its removal).
    @Test func aSentenceEditedOnOneDeviceAndRemovedOnAnotherStaysRemoved() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            let first = SentenceID(), second = SentenceID(), memo = MemoID()
            try d.run(d.a, .collectSentence(first, text: "나는 이제 동물이 아니야, 언니.", page: 150), "2025-03-05T21:50:00+09:00")
            try d.run(d.a, .collectSentence(second, text: "꿈을 꿨어.", page: 180), "2025-03-05T21:51:00+09:00")
            try d.run(d.a, .writeMemo(memo, text: "다시 읽기", page: nil), "2025-03-05T21:52:00+09:00")
            #expect(try d.sync() == 3)
            try d.run(d.b, .removeSentence(first), "2025-03-05T21:55:00+09:00")
            try d.run(d.a, .editSentence(first, text: "edited", page: 151), "2025-03-05T22:00:00+09:00")
            try d.run(d.a, .editSentence(second, text: "edited too", page: 181), "2025-03-05T22:10:00+09:00")
            try d.run(d.b, .removeSentence(second), "2025-03-05T22:20:00+09:00")
            try d.run(d.b, .removeMemo(memo), "2025-03-05T22:30:00+09:00")
            try d.run(d.a, .editMemo(memo, text: "edited memo", page: 3), "2025-03-05T22:40:00+09:00")
            #expect(try d.sync() == 6)
            for store in [d.a, d.b] {
                let view = try #require(try d.view(store))
                #expect(view.sentences.isEmpty && view.memos.isEmpty)
            }
            try d.expectConverged()
        }
    }

    // MARK: Book registers: rating, like, goal, status

    /// A rates 3.0 at 3/5 20:00, B (offline) 4.5 at 20:30: the later in canonical order (B's)
    /// wins on both. Then B rates 2.0 at 20:50 while A (offline) clears the rating at 21:00:
    /// A's clear is last, so there is no rating.
    @Test func twoRatingsTheLaterWins() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            try d.run(d.a, .setRating(stars: 3.0), "2025-03-05T20:00:00+09:00")
            try d.run(d.b, .setRating(stars: 4.5), "2025-03-05T20:30:00+09:00")
            #expect(try d.sync() == 2)
            for store in [d.a, d.b] { #expect(try d.view(store)?.rating == (try Rating(stars: 4.5))) }
            try d.expectConverged()
            try d.run(d.b, .setRating(stars: 2.0), "2025-03-05T20:50:00+09:00")
            try d.run(d.a, .clearRating, "2025-03-05T21:00:00+09:00")
            #expect(try d.sync() == 2)
            for store in [d.a, d.b] { #expect(try d.view(store)?.rating == nil) }
            try d.expectConverged()
        }
    }

    /// Case 1: B likes at 3/5 20:55 and unlikes at 20:56; A (offline) likes at 21:00. Order:
    /// like, unlike, like: liked, likedAt 21:00. Case 2 (both show it liked): B unlikes at 22:00,
    /// A (offline) unlikes at 22:05, B likes again at 22:10. Order: unlike, unlike, like: liked,
    /// likedAt 22:10, 1 liked book in the summary.
    @Test func likeAndUnlikeTheLaterWins() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            try d.run(d.b, .like, "2025-03-05T20:55:00+09:00")
            try d.run(d.b, .unlike, "2025-03-05T20:56:00+09:00")
            try d.run(d.a, .like, "2025-03-05T21:00:00+09:00")
            #expect(try d.sync() == 3)
            for store in [d.a, d.b] {
                let view = try #require(try d.view(store))
                #expect(view.liked && view.likedAt == F.at("2025-03-05T21:00:00+09:00"))
            }
            try d.expectConverged()
            try d.run(d.b, .unlike, "2025-03-05T22:00:00+09:00")
            try d.run(d.a, .unlike, "2025-03-05T22:05:00+09:00")
            try d.run(d.b, .like, "2025-03-05T22:10:00+09:00")
            #expect(try d.sync() == 3)
            for store in [d.a, d.b] {
                let view = try #require(try d.view(store))
                #expect(view.liked && view.likedAt == F.at("2025-03-05T22:10:00+09:00"))
                #expect(try store.withViews { try $0.summary(reader: d.reader).liked } == 1)
            }
            try d.expectConverged()
        }
    }

    /// A sets a goal 3/5 ... 3/20 at 3/5 09:00, B (offline) a goal 3/5 ... 3/31 at 09:30: the
    /// later set wins (target 3/31). Then A deletes the goal at 10:00 and B (offline) changes
    /// its target to 4/10 at 10:05: the change comes after the deletion and finds no goal, so
    /// there is none; the book leaves the goal list on both devices.
    @Test func goalSetChangedAndDeletedTheLaterWins() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            try d.run(d.a, .setGoal(startDate: F.day("2025-03-05"), targetDate: F.day("2025-03-20"), theme: "orange"), "2025-03-05T09:00:00+09:00")
            try d.run(d.b, .setGoal(startDate: F.day("2025-03-05"), targetDate: F.day("2025-03-31"), theme: nil), "2025-03-05T09:30:00+09:00")
            #expect(try d.sync() == 2)
            for store in [d.a, d.b] {
                #expect(try d.view(store)?.goal?.targetDate == F.day("2025-03-31"))
                #expect(try store.withViews { try $0.goalBooks(reader: d.reader) } == [d.book])
            }
            try d.expectConverged()
            try d.run(d.a, .deleteGoal, "2025-03-05T10:00:00+09:00")
            try d.run(d.b, .changeGoal(targetDate: F.day("2025-04-10"), theme: nil), "2025-03-05T10:05:00+09:00")
            #expect(try d.sync() == 2)
            for store in [d.a, d.b] {
                #expect(try d.view(store)?.goal == nil)
                #expect(try store.withViews { try $0.goalBooks(reader: d.reader) }.isEmpty)
            }
            try d.expectConverged()
        }
    }

    /// A marks the book did-not-finish at 3/5 11:00, B (offline) want-to-read at 11:30: the later
    /// wins (wantToRead). Then A marks it did-not-finish at 11:45 and B (offline) records page 20
    /// at 12:00, which sets reading. Order: did-not-finish (11:45), page 20 (12:00): reading.
    @Test func statusChangesTheLaterWins() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            try d.run(d.a, .setStatus(.didNotFinish), "2025-03-05T11:00:00+09:00")
            try d.run(d.b, .setStatus(.wantToRead), "2025-03-05T11:30:00+09:00")
            #expect(try d.sync() == 2)
            for store in [d.a, d.b] { #expect(try d.view(store)?.status == .wantToRead) }
            try d.expectConverged()
            try d.run(d.b, .recordPages(position: 20), "2025-03-05T12:00:00+09:00")
            try d.run(d.a, .setStatus(.didNotFinish), "2025-03-05T11:45:00+09:00")
            #expect(try d.sync() == 2)
            for store in [d.a, d.b] { #expect(try d.view(store)?.status == .reading) }
            try d.expectConverged()
        }
    }

    // MARK: Reader registers

    /// Home order, profile and a year's challenge are last-writer-wins registers by origin.
    /// B writes first in time (09:00: order [other, book], nickname "B", 30 books), A later
    /// (10:00: order [book], nickname "A", 20 books). B's writes reach A after A's own: A keeps
    /// its later ones; A's reach B after B's: B takes them. Both end with A's values.
    @Test func homeOrderProfileAndChallengeAreLastWriterWinsRegisters() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            try d.run(d.a, .addBook(BookMetadata(title: "소년이 온다", pageCount: 216), status: .reading), "2025-03-03T08:30:00+09:00", book: d.other)
            #expect(try d.sync() == 1)
            try d.run(d.b, .setHomeOrder([d.other, d.book]), "2025-03-05T09:00:00+09:00")
            try d.run(d.b, .updateProfile(nickname: "B", imageFileName: nil, theme: nil), "2025-03-05T09:01:00+09:00")
            try d.run(d.b, .setChallenge(year: 2025, books: 30, pages: nil), "2025-03-05T09:02:00+09:00")
            try d.run(d.a, .setHomeOrder([d.book]), "2025-03-05T10:00:00+09:00")
            try d.run(d.a, .updateProfile(nickname: "A", imageFileName: "a.png", theme: nil), "2025-03-05T10:01:00+09:00")
            try d.run(d.a, .setChallenge(year: 2025, books: 20, pages: 5_000), "2025-03-05T10:02:00+09:00")
            #expect(try Devices.deliver(from: d.b, to: d.a).appended == 3)   // older writes arrive late
            #expect(try Devices.deliver(from: d.a, to: d.b).appended == 3)   // newer writes arrive
            for store in [d.a, d.b] {
                let reader = try #require(try store.withViews { try $0.readerView(reader: d.reader) })
                #expect(reader.homeOrder == [d.book])
                #expect(reader.nickname == "A" && reader.imageFileName == "a.png")
                let year = try store.withViews { try $0.yearView(reader: d.reader, year: 2025) }
                #expect(year?.challenge == ChallengeSet(year: 2025, books: 20, pages: 5_000))
            }
            try d.expectConverged()
        }
    }

    // MARK: A book removed while another device reads it

    /// A removes the book at 3/6 09:00; B (offline) records pages 60 at 10:00 and 100 at 11:00.
    /// Order: removal, 60, 100. The pages were read: 3/6 shows 100 pages on both devices; the
    /// book stays removed (not in the library, not counted as reading) until B adds it again (12:00,
    /// after a sync: B sees it removed), when it comes back at page 100.
    @Test func aBookRemovedWhileAnotherDeviceReadsIt() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            try d.run(d.a, .removeBook, "2025-03-06T09:00:00+09:00")
            try d.run(d.b, .recordPages(position: 60), "2025-03-06T10:00:00+09:00")
            try d.run(d.b, .recordPages(position: 100), "2025-03-06T11:00:00+09:00")
            #expect(try d.sync() == 3)
            for store in [d.a, d.b] {
                #expect(try d.pages(store) == [0, 0, 0, 0, 0, 100, 0, 0, 0, 0])
                let view = try #require(try d.view(store))
                #expect(!view.inLibrary)
                let summary = try store.withViews { try $0.summary(reader: d.reader) }
                #expect(summary.reading == 0 && summary.totalPages == 100)
            }
            try d.expectConverged()
            try d.run(d.b, .addBook(D.metadata, status: .reading), "2025-03-06T12:00:00+09:00")
            #expect(try d.sync() == 1)
            for store in [d.a, d.b] {
                let view = try #require(try d.view(store))
                #expect(view.inLibrary && view.position == 100)
                #expect(try store.withViews { try $0.summary(reader: d.reader).reading } == 1)
                #expect(try d.pages(store) == [0, 0, 0, 0, 0, 100, 0, 0, 0, 0])
            }
            try d.expectConverged()
        }
    }

    // MARK: Late events

    /// B (offline since 3/3) records page 40 for the first book, back-dated to 3/3 22:00, at 3/4
    /// 12:00. A meanwhile records pages 100 (3/5 20:00) and 150 (3/6 20:00) of the first book and
    /// 30 of a second book (3/5 21:00). B's event arrives at A after all of them but sorts before
    /// A's events of the first book (stamp 3/4 12:00): A refolds that one book, not the second.
    /// Marks of the first book in time order: 40, 100, 150: credits 40 (3/3), 60 (3/5), 50 (3/6);
    /// with the second book: 3/3 40, 3/5 90, 3/6 50.
    @Test func aLateBackDatedEventRefoldsOnlyItsBook() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            try d.run(d.a, .addBook(BookMetadata(title: "소년이 온다", pageCount: 216), status: .reading), "2025-03-03T08:30:00+09:00", book: d.other)
            #expect(try d.sync() == 1)
            try d.run(d.b, .recordPages(position: 40), "2025-03-03T22:00:00+09:00", recorded: "2025-03-04T12:00:00+09:00")
            try d.run(d.a, .recordPages(position: 100), "2025-03-05T20:00:00+09:00")
            try d.run(d.a, .recordPages(position: 30), "2025-03-05T21:00:00+09:00", book: d.other)
            try d.run(d.a, .recordPages(position: 150), "2025-03-06T20:00:00+09:00")
            #expect(try d.pages(d.a) == [0, 0, 0, 0, 130, 50, 0, 0, 0, 0])
            let result = try Devices.deliver(from: d.b, to: d.a)
            #expect(result.appended == 1 && result.refoldedBooks == 1)
            #expect(try d.pages(d.a) == [0, 0, 40, 0, 90, 50, 0, 0, 0, 0])
            #expect(try d.view(d.a)?.entries.map(\.credited) == [40, 60, 50])
            #expect(try d.a.viewDigest() == d.a.freshFoldDigest())
            // B receives A's events, which sort after its own: folded in order, no refold.
            let back = try Devices.deliver(from: d.a, to: d.b)
            #expect(back.appended == 3 && back.refoldedBooks == 0)
            try d.expectConverged()
        }
    }

    // MARK: Merge guarantees

    /// A batch with one envelope no receiver can take merges everything else: the bad envelope is
    /// kept in the quarantine with the field and the rule, the others are appended and folded, and
    /// the good batch delivered later converges the two stores. (Before: the whole batch was
    /// refused, every sync failed at that page for good.)
    @Test func aMergeBatchWithOneBadEnvelopeQuarantinesItAndMergesTheRest() throws {
        struct Case { let name: String; let edit: ([EventEnvelope]) -> [EventEnvelope]; let index: Int; let field: String }
        let cases: [Case] = [
            Case(name: "no origin", edit: { var b = $0; b[2].origin = nil; return b }, index: 2, field: "origin"),
            Case(name: "provisional replica", edit: { var b = $0; b[2].origin?.replica = .provisional; return b }, index: 2, field: "origin.replica"),
            Case(name: "negative position", edit: { var b = $0
                if case .pagesRead(var e) = b[2].event { e.position = -5; b[2].event = .pagesRead(e) }
                return b }, index: 2, field: "position"),
            Case(name: "an event ID repeated with another fact", edit: { var b = $0; b[3].eventID = b[1].eventID; return b }, index: 3, field: "eventID"),
            Case(name: "a sequence naming two events", edit: { var b = $0; b[2].eventID = EventID()
                let sequence = b[0].origin!.sequence
                b[2].origin?.sequence = sequence; return b }, index: 2, field: "origin.sequence"),
            // A's own sequence 1 (its BookAdded, held) under another event ID.
            Case(name: "a sequence already held", edit: { var b = $0; b[2].eventID = EventID()
                let stamp = b[2].origin!.stamp
                b[2].origin = EventOrigin(stamp: stamp, replica: Devices.replicaA, sequence: 1); return b }, index: 2, field: "origin.sequence"),
        ]
        for c in cases {
            try withTempDirectory { dir in
                let d = try setUp(dir)
                try d.run(d.b, .recordPages(position: 50), "2025-03-05T20:00:00+09:00")
                try d.run(d.b, .setRating(stars: 4), "2025-03-05T20:01:00+09:00")
                try d.run(d.b, .recordPages(position: 80), "2025-03-05T20:02:00+09:00")
                try d.run(d.b, .like, "2025-03-05T20:03:00+09:00")
                let batch = try d.b.changes(since: try d.a.versionVector())
                #expect(batch.count == 4)
                let bad = c.edit(batch)
                let last = try d.a.log.lastPosition()
                let result = try d.a.merge(bad)
                #expect(result.quarantined == 1 && result.appended == 3, "\(c.name): \(result)")
                #expect(try d.a.log.lastPosition() == last + 3, "\(c.name)")
                let kept = try d.a.quarantine()
                #expect(kept.map(\.eventID) == [bad[c.index].eventID], "\(c.name): \(kept)")
                #expect(kept.first?.reason.hasPrefix(c.field + ":") == true, "\(c.name): \(kept)")
                // The views are a fold of what is held: the store's own fresh fold agrees.
                #expect(try d.a.freshFoldDigest() == d.a.viewDigest(), "\(c.name)")
                // A second delivery of the same bad batch changes nothing; the good one converges.
                let again = try d.a.merge(bad)
                let keptAgain = try d.a.quarantine().count
                #expect(again.appended == 0 && keptAgain == 1, "\(c.name): \(again)")
                try d.a.merge(batch)
                try d.expectConverged()
                // The bad copy stays aside (the good one did not make it acceptable).
                #expect(try d.a.quarantine().map(\.eventID) == [bad[c.index].eventID], "\(c.name)")
            }
        }
    }

    /// `changes(since:)` paged with `after:` (the origin of each page's last event) gives every
    /// event a peer lacks exactly once, in canonical order, for any page size, from an empty
    /// vector and from a partial one. The log holds a demo history (A's events) and events of B
    /// interleaved in canonical order.
    @Test func pagingChangesWithAfterReturnsEverythingExactlyOnce() throws {
        try withTempDirectory { dir in
            let d = try setUp(dir)
            let history = F.history(readers: 2, days: 60, seed: 0x51C)
            try F.appendInChunks(d.a, history)
            for (i, position) in [30, 60, 90, 120].enumerated() {
                try d.run(d.b, .recordPages(position: position), "2025-03-0\(5 + i)T20:00:00+09:00")
            }
            #expect(try d.sync() == history.count + 4)
            let all = try d.a.changes(since: VersionVector(), limit: .max)
            #expect(UInt64(all.count) == (try d.a.log.lastPosition()))
            #expect(zip(all, all.dropFirst()).allSatisfy { $0.origin! < $1.origin! }, "not in canonical order")
            #expect(Set(all.map(\.origin!.replica)) == [Devices.replicaA, Devices.replicaB])
            let partial = VersionVector([Devices.replicaA: UInt64(history.count / 3), Devices.replicaB: 2])
            for vector in [VersionVector(), partial] {
                let expected = all.filter { !vector.covers($0.origin!) }.map(\.eventID)
                for limit in [1, 7, 100, 10_000] {
                    var pages: [EventID] = []
                    var after: EventOrigin?
                    var calls = 0
                    while true {
                        let page = try d.a.changes(since: vector, after: after, limit: limit)
                        calls += 1
                        guard let last = page.last else { break }
                        #expect(page.count <= limit)
                        pages += page.map(\.eventID)
                        after = last.origin
                    }
                    #expect(pages == expected, "limit \(limit), vector \(vector)")
                    #expect(calls == (expected.count + limit - 1) / limit + 1, "limit \(limit): \(calls) calls")
                }
            }
            #expect(throws: EventStoreError.self) { try d.a.changes(since: VersionVector(), limit: 0) }
        }
    }

    /// Two demo stores built with different seeds (different readers, different replicas) sync
    /// both ways: they converge, and a second exchange moves nothing in either direction.
    @Test func aSecondExchangeMovesNothing() throws {
        try withTempDirectory { dir in
            let a = try ReadingStore.open(at: dir.child("a"), replica: DemoHistory.replica(seed: 1))
            let b = try ReadingStore.open(at: dir.child("b"), replica: DemoHistory.replica(seed: 2))
            let one = DemoHistory.generate(.init(readers: 2, days: 90, seed: 1))
            let two = DemoHistory.generate(.init(readers: 2, days: 90, seed: 2, firstReaderIndex: 2))
            try F.appendInChunks(a, one)
            try F.appendInChunks(b, two)
            #expect(try Devices.deliver(from: b, to: a).appended == two.count)
            #expect(try Devices.deliver(from: a, to: b).appended == one.count)
            try Devices.expectConverged([a, b])
            #expect(try b.changes(since: try a.versionVector()).isEmpty)
            #expect(try a.changes(since: try b.versionVector()).isEmpty)
            let last = (try a.log.lastPosition(), try b.log.lastPosition())
            let again = (try Devices.deliver(from: b, to: a), try Devices.deliver(from: a, to: b))
            #expect(again.0 == MergeResult() && again.1 == MergeResult())
            #expect(try a.log.lastPosition() == last.0 && b.log.lastPosition() == last.1)
            // Delivering everything again (an empty peer vector) moves nothing either.
            let all = try a.merge(try b.changes(since: VersionVector(), limit: .max))
            #expect(all.appended == 0 && all.alreadyHeld == one.count + two.count)
        }
    }

    // MARK: A kill during a merge

    /// A child merges a 3-reader, 2-year demo store into an empty one in chunks (one merge, one
    /// write transaction each) and is killed with SIGKILL at a random moment (0 ... 600 ms
    /// into the merges, which take about a second). After each kill the
    /// target holds a whole number of chunks (all or nothing of each merge), every acknowledged
    /// chunk, views caught up and equal to a fresh fold, an intact log and a vector that covers
    /// exactly what it holds; finishing the merge in the parent gives the source's views.
    @Test func aKillDuringAMergeLeavesAllOrNothing() throws {
        let trials = Reliability.int("REPLICATION_KILL_TRIALS", 4)
        let chunk = 500
        var rng = SplitMix64(seed: UInt64(Reliability.int("REPLICATION_KILL_SEED", 0x12C1)))
        try withTempDirectory { dir in
            let sourceURL = dir.child("source")
            let total: Int
            let sourceDigest: String
            do {
                let source = try ReadingStore.open(at: sourceURL, replica: DemoHistory.replica(seed: 12))
                try F.appendInChunks(source, F.history(readers: 3, days: 730, seed: 12))
                total = Int(try source.log.lastPosition())
                sourceDigest = try source.viewDigest()
            }
            var killed = 0
            var held: [UInt64] = []
            for trial in 0..<trials {
                let url = dir.child("target\(trial)")
                // The child kills itself (SIGKILL from a timer thread) 0 ... 600 ms after it starts
                // merging: timed inside the child, so a loaded machine that is slow to pass its
                // output to the parent cannot push the kill past the last merge.
                let delay = Int.random(in: 0...600, using: &rng)
                let child = try HelperProcess(["merge-chunks", url.path, "--from", sourceURL.path, "--chunk", "\(chunk)",
                                               "--kill-after-ms", "\(delay)"])
                let status = child.waitForExit()
                let lines = child.lines
                if !lines.contains("done") {
                    killed += 1
                    #expect(status == SIGKILL, "trial \(trial): \(lines.suffix(2))")
                }
                #expect(lines.first == "start \(total)", "trial \(trial): \(lines.prefix(1))")
                let target = try ReadingStore.open(at: url)
                let last = try target.log.lastPosition()
                held.append(last)
                #expect(last % UInt64(chunk) == 0 || last == UInt64(total), "trial \(trial): \(last) events is not whole merges of \(chunk)")
                for ack in lines.filter({ $0.hasPrefix("ack ") }) {
                    let acknowledged = UInt64(ack.split(separator: " ")[2]) ?? .max
                    #expect(acknowledged <= last, "trial \(trial): acknowledged \(ack) but the log ends at \(last)")
                }
                #expect(try target.viewCheckpoint() == last, "trial \(trial)")
                #expect(try target.viewDigest() == target.freshFoldDigest(), "trial \(trial): views differ from a fresh fold")
                #expect(try target.log.verify().isIntact, "trial \(trial)")
                let vector = try target.versionVector()
                #expect(vector[DemoHistory.replica(seed: 12)] == last, "trial \(trial): vector \(vector)")
                let source = try ReadingStore.open(at: sourceURL)
                try target.merge(try source.changes(since: vector, limit: .max))
                #expect(try target.log.lastPosition() == UInt64(total))
                #expect(try target.viewDigest() == sourceDigest, "trial \(trial): the finished merge differs from the source")
            }
            Reliability.report("merge-kill", "\(trials) trials, \(killed) killed mid-merge (events held at the kill: \(held)), chunks of \(chunk) of \(total) events")
            if trials > 0 { #expect(killed > 0, "no trial killed the merge mid-run") }
        }
    }
}

/// Late events spread over a long history (the benchmark's M2 workload): 200 back-dated page
/// marks of a device that was offline, each merged alone into a 10-year demo store and each
/// followed by an in-order rating of the same book from a third device. Every late mark refolds
/// exactly one book, and the views end equal to the canonical fold of the log and to the
/// store's own fresh fold (log order with deferred refolds).
struct ReplicationLateHistoryTests {
    typealias F = Facade

    @Test func lateBackDatedMarksAcrossATenYearHistoryKeepTheViewsEqualToAFreshFold() throws {
        try withTempDirectory { dir in
            let events = F.history(readers: 1, days: 3650, seed: DemoHistory.Options().seed)
            let store = try ReadingStore.open(at: dir.child("store"))
            try F.appendInChunks(store, events)
            let batch = try store.changes(since: VersionVector(), limit: .max)
            let reader = events[0].reader
            let marks = batch.filter { if case .pagesRead = $0.event { true } else { false } }
            let lateReplica = ReplicaID(UUID(uuidString: "1A7E0000-0000-4000-8000-000000000001")!)
            let onTimeReplica = ReplicaID(UUID(uuidString: "0471BE00-0000-4000-8000-000000000002")!)
            let lastStamp = batch.last!.origin!.stamp
            var refoldedOne = 0
            for i in 0..<200 {
                // Back-dated an hour before one of the history's page marks, one page lower,
                // stamped when it was made (years before the book's last event).
                let anchor = marks[(i * 7_919) % marks.count]
                guard case .pagesRead(let mark) = anchor.event else { continue }
                let occurred = anchor.occurredAt.adding(seconds: -3_600)
                let made = occurred.adding(seconds: 60)
                let late = EventEnvelope(reader: reader, occurredAt: occurred, timeZone: anchor.timeZone, recordedAt: made,
                                         event: .pagesRead(PagesRead(book: mark.book, position: max(0, mark.position - 1))),
                                         origin: EventOrigin(stamp: UInt64(made.microseconds), replica: lateReplica, sequence: UInt64(i + 1)))
                let result = try store.merge([late])
                if result.appended == 1 && result.refoldedBooks == 1 { refoldedOne += 1 }
                let stamp = lastStamp + UInt64(i + 1)
                let at = Timestamp(microseconds: Int64(stamp))
                let rating = try store.merge([EventEnvelope(
                    reader: reader, occurredAt: at, timeZone: anchor.timeZone, recordedAt: at,
                    event: .ratingSet(RatingSet(book: mark.book, rating: try Rating(quarters: 1 + i % 20))),
                    origin: EventOrigin(stamp: stamp, replica: onTimeReplica, sequence: UInt64(i + 1)))])
                #expect(rating.appended == 1 && rating.refoldedBooks == 0, "rating \(i)")
            }
            #expect(refoldedOne == 200)
            var canonical = InMemoryViewStore()
            try ReadingProjector().fold(try store.events(), into: &canonical)
            let digest = try store.viewDigest()
            #expect(digest == (try ViewDigest.of(canonical)), "the views differ from the canonical fold of the log")
            #expect(digest == (try store.freshFoldDigest()), "the views differ from the store's fresh fold")
            #expect(digest == (try store.rebuild().digest), "the views differ from a rebuild")
        }
    }
}
