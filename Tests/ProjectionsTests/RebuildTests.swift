import Foundation
import Testing
import ReadingEvents
@testable import Projections

/// A generated, valid history: several readers who travel between zones, a few thousand events,
/// every one produced by the decide step (so back-dated records, corrections, re-reads, sessions
/// with pauses and finishes are all ones the package accepts). Same seed, same history.
struct GeneratedHistory {
    var envelopes: [EventEnvelope] = []

    init(seed: UInt64, readers readerCount: Int = 4, steps: Int = 3_600) {
        var rng = SplitMix64(seed: seed)
        let zones = ["Asia/Seoul", "America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Los_Angeles",
                     "Asia/Kathmandu", "Pacific/Chatham", "America/Sao_Paulo"]
        let categories: [String?] = ["국내도서>소설/시/희곡>한국소설", "국내도서>인문학>철학", "외국도서>Fiction>Classics", nil]
        struct Reader {
            var id: ReaderID; var zone: String; var books: [BookID] = []; var state = ReaderState()
            var openSessions: [BookID: [(SessionID, Bool)]] = [:]   // (session, running)
            var nextSentence = 0
        }
        var readers: [Reader] = (0..<readerCount).map { k in Reader(id: seededID(&rng), zone: zones[k % zones.count]) }
        var states: [StreamID: BookState] = [:]
        var versions: [StreamID: UInt64] = [:]
        var position: UInt64 = 0
        // Time runs from 2026-01-01 over about a year, across every DST change of the zones above.
        var now = Timestamp(iso8601: "2026-01-01T00:00:00Z")!

        func roll(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }

        for _ in 0..<steps {
            now = now.adding(seconds: Int64(600 + roll(5 * 3600)))
            let r = roll(readers.count)
            if roll(40) == 0 { readers[r].zone = zones[roll(zones.count)] }    // a trip
            let reader = readers[r]
            var at = now
            var command: BookCommand?
            var book: BookID
            if reader.books.isEmpty || roll(30) == 0 {
                book = seededID(&rng)
                let metadata = BookMetadata(title: "Book \(roll(1000))", authors: "한강 (지은이)", pageCount: 80 + roll(400),
                                            categoryPath: categories[roll(categories.count)],
                                            thicknessMillimetres: roll(3) == 0 ? Double(5 + roll(30)) : nil)
                command = .addBook(metadata, status: roll(2) == 0 ? .reading : .wantToRead)
                readers[r].books.append(book)
            } else {
                book = reader.books[roll(reader.books.count)]
                let stream = StreamID.book(reader: reader.id, book: book)
                let state = states[stream] ?? BookState()
                let pageCount = state.metadata?.pageCount ?? 100
                let open = reader.openSessions[book] ?? []
                switch roll(20) {
                case 0..<7:
                    command = .recordPages(position: min(pageCount, state.position + 1 + roll(40)))
                case 7:
                    // A back-dated record, a few hours to two days ago, somewhere between its neighbours.
                    at = now.adding(seconds: -Int64(3600 + roll(48 * 3600)))
                    let before = state.timeline.position(before: at)
                    let after = state.timeline.firstRecord(after: at)?.position ?? pageCount
                    command = .recordPages(position: before + roll(max(1, after - before + 1)))
                case 8:
                    if roll(2) == 0 { at = now.adding(seconds: -Int64(roll(24 * 3600))) }
                    command = .correctProgress(position: max(0, state.timeline.position(before: at) - 1 - roll(15)))
                case 9:
                    if let (session, running) = open.first {
                        switch roll(4) {
                        case 0: command = running ? .pauseSession(session) : .resumeSession(session)
                        case 1: command = .discardSession(session)
                        default: command = .finishSession(session, endPosition: roll(2) == 0 ? nil : min(pageCount, state.position + roll(30)),
                                                          durationSeconds: roll(7200))
                        }
                    } else {
                        command = .startSession(seededID(&rng))
                    }
                case 10:
                    command = state.goal == nil
                        ? .setGoal(startDate: LocalDate(dayNumber: Int(now.seconds / 86_400)), targetDate: LocalDate(dayNumber: Int(now.seconds / 86_400) + roll(40)), theme: "green")
                        : .changeGoal(targetDate: LocalDate(dayNumber: Int(now.seconds / 86_400) + roll(40)), theme: nil)
                case 11:
                    command = state.isFinished ? .startReadThrough
                        : (state.position == pageCount ? .finishBook(on: LocalClock().localDay(of: now, in: try! ZoneID(reader.zone))) : .recordPages(position: pageCount))
                case 12: command = .collectSentence(seededID(&rng), text: "문장 \(readers[r].nextSentence)", page: 1 + roll(pageCount)); readers[r].nextSentence += 1
                case 13: command = .writeMemo(seededID(&rng), text: "메모", page: nil)
                case 14: command = .setRating(stars: Double(1 + roll(20)) / 4)
                case 15: command = roll(2) == 0 ? .like : .unlike
                case 16: command = roll(8) == 0 ? .undoFinish : .setStatus(roll(3) == 0 ? .didNotFinish : .reading)
                case 17: command = roll(10) == 0 ? .removeBook : .deleteGoal
                case 18:
                    let order = reader.books.shuffled(using: &rng).prefix(3)
                    if let events = try? ReaderCommand.setHomeOrder(Array(order)).decide(in: reader.state) {
                        for event in events {
                            position += 1
                            let stream = StreamID.reader(reader.id)
                            versions[stream, default: 0] += 1
                            envelopes.append(EventEnvelope(position: position, stream: stream, streamVersion: versions[stream]!,
                                                           reader: reader.id, occurredAt: now, timeZone: try! ZoneID(reader.zone),
                                                           recordedAt: now, event: event))
                            readers[r].state.apply(event)
                        }
                    }
                default:
                    command = .recordPages(position: min(pageCount, state.position + roll(25)))
                }
            }
            guard let command else { continue }
            let stream = StreamID.book(reader: reader.id, book: book)
            var state = states[stream] ?? BookState()
            guard let events = try? command.decide(for: book, in: state, at: at) else { continue }
            for event in events {
                position += 1
                versions[stream, default: 0] += 1
                envelopes.append(EventEnvelope(position: position, stream: stream, streamVersion: versions[stream]!,
                                               reader: reader.id, occurredAt: at, timeZone: try! ZoneID(readers[r].zone),
                                               recordedAt: now, event: event))
                state.apply(event, occurredAt: at)
                switch event {
                case .sessionStarted(let e): readers[r].openSessions[book, default: []].append((e.session, true))
                case .sessionPaused(let e):
                    if let i = readers[r].openSessions[book]?.firstIndex(where: { $0.0 == e.session }) { readers[r].openSessions[book]![i].1 = false }
                case .sessionResumed(let e):
                    if let i = readers[r].openSessions[book]?.firstIndex(where: { $0.0 == e.session }) { readers[r].openSessions[book]![i].1 = true }
                case .sessionFinished(let e): readers[r].openSessions[book]?.removeAll { $0.0 == e.session }
                case .sessionDiscarded(let e): readers[r].openSessions[book]?.removeAll { $0.0 == e.session }
                case .bookRemoved: readers[r].openSessions[book] = nil; readers[r].books.removeAll { $0 == book }
                default: break
                }
            }
            states[stream] = state
        }
    }
}

/// The process time zone, changed for the length of a closure and restored after.
func withProcessTimeZone<T>(_ identifier: String, _ body: () throws -> T) rethrows -> T {
    let saved = getenv("TZ").map { String(cString: $0) }
    setenv("TZ", identifier, 1); tzset(); NSTimeZone.resetSystemTimeZone()
    defer {
        if let saved { setenv("TZ", saved, 1) } else { unsetenv("TZ") }
        tzset(); NSTimeZone.resetSystemTimeZone()
    }
    return try body()
}

/// The machine's current UTC offset in seconds, as the C library sees it.
func processUTCOffset(at seconds: Int) -> Int {
    var t = time_t(seconds)
    var parts = tm()
    localtime_r(&t, &parts)
    return Int(parts.tm_gmtoff)
}

/// Rebuilding gives the same views under any machine zone: the fold reads only each event's zone.
/// Serialized: it changes the process's TZ.
@Suite("Rebuild under any machine zone", .serialized)
struct RebuildTests {
    @Test func theGeneratedHistoryIsLargeAndVaried() throws {
        let history = GeneratedHistory(seed: 42)
        let types = Set(history.envelopes.map(\.type.tag))
        #expect(history.envelopes.count >= 2_000)
        // Every kind of fact the views care about occurs.
        for tag in ["BookAdded", "PagesRead", "ProgressCorrected", "ReadThroughStarted", "SessionStarted", "SessionPaused",
                    "SessionResumed", "SessionFinished", "SessionDiscarded", "BookFinished", "GoalSet", "HomeOrderSet",
                    "SentenceCollected", "RatingSet", "BookLiked"] {
            #expect(types.contains(tag), "no \(tag) in the generated history")
        }
        #expect(Set(history.envelopes.map(\.timeZone)).count >= 4)
        #expect(history.envelopes.contains { $0.recordedAt > $0.occurredAt })   // back-dated entries
        #expect(history.envelopes.map(\.position) == Array(1...UInt64(history.envelopes.count)))
        #expect(GeneratedHistory(seed: 42).envelopes.map(\.event) == history.envelopes.map(\.event))
    }

    @Test func foldingUnderTwoMachineZonesGivesEqualStores() throws {
        let history = GeneratedHistory(seed: 42)
        let probe = 1_773_000_000  // 2026-03-08T20:00:00Z
        let (east, eastOffset) = try withProcessTimeZone("Pacific/Kiritimati") {
            (try History.fold(history.envelopes), processUTCOffset(at: probe))
        }
        let (west, westOffset) = try withProcessTimeZone("Pacific/Pago_Pago") {
            (try History.fold(history.envelopes), processUTCOffset(at: probe))
        }
        // The process zone really changed: +14 h, then -11 h.
        #expect(eastOffset == 14 * 3600)
        #expect(westOffset == -11 * 3600)
        #expect(east == west)
        // And with a day-start hour.
        let east4 = try withProcessTimeZone("Pacific/Kiritimati") { try History.fold(history.envelopes, dayStartHour: 4) }
        let west4 = try withProcessTimeZone("America/St_Johns") { try History.fold(history.envelopes, dayStartHour: 4) }
        #expect(east4 == west4)
        #expect(east4 != east)
    }

    @Test func localClockResultsDoNotDependOnTheProcessZone() throws {
        let probes: [(String, String)] = [
            ("2026-03-08T06:30:00Z", "America/New_York"), ("2026-11-01T05:30:00Z", "America/New_York"),
            ("2026-03-02T14:50:00Z", "Asia/Seoul"), ("2026-04-12T03:00:00Z", "America/Los_Angeles"),
            ("2026-04-04T15:30:00Z", "Australia/Lord_Howe"), ("2026-09-27T13:45:00Z", "Pacific/Chatham"),
        ]
        func compute() -> [String] {
            let clock = LocalClock(), clock4 = LocalClock(dayStartHour: 4)
            return probes.map { iso, id in
                let t = instant(iso), z = zone(id)
                let local = clock.localDateTime(of: t, in: z)
                let pieces = clock.split(from: t, to: t.adding(seconds: 9 * 3600), in: z)
                return "\(local.date) \(local.secondOfDay) \(clock.localDay(of: t, in: z)) \(clock4.localDay(of: t, in: z)) "
                    + "\(clock.timeOfDay(of: t, in: z)) " + pieces.map { "\($0.day)/\($0.bucket)/\($0.seconds)" }.joined(separator: ",")
            }
        }
        let utc = withProcessTimeZone("UTC") { compute() }
        let kiritimati = withProcessTimeZone("Pacific/Kiritimati") { compute() }
        let newYork = withProcessTimeZone("America/New_York") { compute() }
        #expect(utc == kiritimati)
        #expect(utc == newYork)
        // Worked by hand: 06:30Z on 2026-03-08 is 01:30 EST (5_400 s into the day), and
        // 05:30Z on 2026-11-01 is 01:30 EDT, the first of the two 01:30s.
        #expect(utc[0].hasPrefix("2026-03-08 5400 2026-03-08 2026-03-07 night"))
        #expect(utc[1].hasPrefix("2026-11-01 5400 2026-11-01 2026-10-31 night"))
        // 14:50Z = 23:50 KST on 03-02 (85_800 s).
        #expect(utc[2].hasPrefix("2026-03-02 85800 2026-03-02 2026-03-02 evening"))
    }

    @Test func generatedHistoryTotalsAgreeWithEachOther() throws {
        // The incremental totals are consistent with the per-book entries they come from.
        let history = GeneratedHistory(seed: 7)
        let store = try History.fold(history.envelopes)
        let all = LocalDate(dayNumber: 0)...LocalDate(dayNumber: 40_000)
        for reader in try store.readers() {
            let views = try store.bookViews(reader: reader)
            let credited = views.reduce(0) { $0 + $1.entries.reduce(0) { $0 + $1.credited } }
            let days = try store.dayTotals(reader: reader, in: all)
            let buckets = try store.bucketTotals(reader: reader)
            let months = try store.monthTotals(reader: reader, in: YearMonth(year: 1970, month: 1)...YearMonth(year: 2100, month: 1))
            #expect(days.reduce(0) { $0 + $1.1.pages } == credited)
            #expect(buckets.pages.reduce(0, +) == credited)
            #expect(months.reduce(0) { $0 + $1.1.pages } == credited)
            #expect(days.allSatisfy { $0.1.pages >= 0 && $0.1.seconds >= 0 })
            // Measured seconds of finished sessions = seconds on days = seconds in buckets.
            let measured = views.reduce(0) { $0 + $1.sessions.filter(\.isFinished).reduce(0) { $0 + $1.measuredSeconds } }
            #expect(days.reduce(0) { $0 + $1.1.seconds } == measured)
            #expect(buckets.seconds.reduce(0, +) == measured)
            // Finishes per month = finish days kept on the books.
            #expect(months.reduce(0) { $0 + $1.1.finishes } == views.reduce(0) { $0 + $1.finishes.count })
            // Streak runs are exactly the maximal runs of reading days.
            var runs: [StreakRun] = []
            for (day, total) in days where total.isReadingDay {
                if let last = runs.last, last.end.adding(days: 1) == day { runs[runs.count - 1].end = day }
                else { runs.append(StreakRun(start: day, end: day)) }
            }
            #expect(try store.streakRuns(reader: reader) == runs)
            // Per-book day totals add up to the day totals.
            var perBook: [LocalDate: DayTotal] = [:]
            for view in views {
                for (day, total) in try store.bookDayTotals(reader: reader, book: view.book, in: all) {
                    perBook[day, default: DayTotal()].pages += total.pages
                    perBook[day, default: DayTotal()].seconds += total.seconds
                }
            }
            #expect(perBook.filter { !$0.value.isZero }.count == days.count)
            #expect(days.allSatisfy { perBook[$0.0] == $0.1 })
        }
    }
}
