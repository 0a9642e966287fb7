import Foundation
import TestSupport
import Projections
import ReadingEvents
import Testing
@testable import EventStoreLMDB

/// Bad input through the facade: every `ValidationRule` triggered by a command (or, for the
/// rules that guard values, by the value's initializer), a 1 MB sentence, unknown time zones,
/// instants in year 1 and year 9999. Each is a typed error naming the rule, and the store's files
/// are byte-identical before and after.
@Suite struct ReliabilityBadInputTests {
    typealias F = Facade
    static let metadata = BookMetadata(title: "Bad input", authors: "A", pageCount: 300)

    @Test func everyValidationRuleIsATypedErrorThatWritesNothing() throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            let reader = ReaderID()
            let plain = BookID(), finished = BookID(), removed = BookID(), goal = BookID()
            let sentence = SentenceID(), session = SessionID()
            var minute = 0
            func context(zone: String = "Asia/Seoul") -> CommandContext {
                minute += 1
                return CommandContext(reader: reader, occurredAt: Timestamp(microseconds: 1_740_000_000_000_000 + Int64(minute) * 60_000_000),
                                      timeZone: zone)
            }
            do {
                let store = try ReadingStore.open(at: url)
                for book in [plain, finished, removed, goal] {
                    try store.execute(.addBook(Self.metadata, status: .reading), book: book, context: context())
                }
                try store.execute(.recordPages(position: 50), book: plain, context: context())
                try store.execute(.collectSentence(sentence, text: "kept", page: 10), book: plain, context: context())
                try store.execute(.startSession(session), book: plain, context: context())
                try store.execute(.finishBook(on: F.day("2025-02-20")), book: finished, context: context())
                try store.execute(.removeBook, book: removed, context: context())
                try store.execute(.setGoal(startDate: F.day("2025-02-01"), targetDate: F.day("2025-03-01"), theme: nil), book: goal, context: context())
            }
            let before = try snapshot(of: url)
            let store = try ReadingStore.open(at: url)
            let lastBefore = try store.log.lastPosition()
            let digestBefore = try store.viewDigest()

            let megabyte = String(repeating: "가", count: 1 << 20 / 3 + 1)
            let book: [(ValidationRule, BookCommand, BookID)] = [
                (.outOfRange, .recordPages(position: 301), plain),
                (.offQuarterStep, .setRating(stars: 1.1), plain),
                (.empty, .collectSentence(SentenceID(), text: " \n\t ", page: nil), plain),
                (.tooLong, .collectSentence(SentenceID(), text: megabyte, page: nil), plain),
                (.malformed, .addBook(Self.metadata, status: .finished), BookID()),
                (.targetBeforeStart, .setGoal(startDate: F.day("2025-03-01"), targetDate: F.day("2025-02-01"), theme: nil), plain),
                (.bookNotAdded, .recordPages(position: 1), BookID()),
                (.bookAlreadyAdded, .addBook(Self.metadata, status: .reading), plain),
                (.bookRemoved, .recordPages(position: 1), removed),
                (.bookFinished, .recordPages(position: 10), finished),
                (.bookNotFinished, .startReadThrough, plain),
                (.goalAlreadyActive, .setGoal(startDate: F.day("2025-02-01"), targetDate: F.day("2025-04-01"), theme: nil), goal),
                (.noActiveGoal, .deleteGoal, plain),
                (.notFound, .removeSentence(SentenceID()), plain),
                (.duplicateID, .collectSentence(sentence, text: "again", page: nil), plain),
                (.sessionNotStarted, .pauseSession(SessionID()), plain),
                (.sessionState, .resumeSession(session), plain),
                (.notBackward, .correctProgress(position: 60), plain),
            ]
            var covered = Set<ValidationRule>()
            func expectRejected(_ rule: ValidationRule, _ label: String, _ body: () throws -> Void) {
                do {
                    try body()
                    Issue.record("\(label) was accepted")
                } catch let error as ValidationError {
                    #expect(error.rule == rule, "\(label): \(error)")
                    #expect(!error.field.isEmpty && !error.detail.isEmpty)
                    covered.insert(error.rule)
                } catch {
                    Issue.record("\(label): not a ValidationError: \(error)")
                }
            }
            for (rule, command, target) in book {
                expectRejected(rule, "\(rule)") { try store.execute(command, book: target, context: context()) }
            }
            expectRejected(.duplicateElement, "home order") {
                try store.execute(.setHomeOrder([plain, goal, plain]), context: context())
            }
            expectRejected(.unknownTimeZone, "zone") {
                try store.execute(.recordPages(position: 60), book: plain, context: context(zone: "Mars/Olympus_Mons"))
            }
            expectRejected(.unknownTimeZone, "empty zone") {
                try store.execute(.recordPages(position: 60), book: plain, context: context(zone: ""))
            }
            // Value rules that guard the command's inputs before it is built.
            expectRejected(.badCheckDigit, "isbn") { _ = try ISBN13("9788936433591") }
            expectRejected(.malformed, "isbn letters") { _ = try ISBN13("97889364335XY") }
            // Year 1 and year 9999: dates out of the calendar, instants out of 1900 ..< 2200.
            expectRejected(.outOfRange, "year 0") { _ = try LocalDate(year: 0, month: 12, day: 31) }
            expectRejected(.outOfRange, "year 10000") { _ = try LocalDate(year: 10_000, month: 1, day: 1) }
            let year1 = Timestamp(microseconds: -62_135_596_800_000_000)      // 0001-01-01T00:00:00Z
            let year9999 = Timestamp(microseconds: 253_402_300_799_000_000)   // 9999-12-31T23:59:59Z
            for (label, instant) in [("year 1", year1), ("year 9999", year9999)] {
                // `.like` does not depend on time: a page record at year 1 is first rejected by the
                // timeline (notBackward), since the decision runs before the instants are checked.
                expectRejected(.outOfRange, "occurredAt \(label)") {
                    try store.execute(.like, book: plain,
                                      context: CommandContext(reader: reader, occurredAt: instant, timeZone: "Asia/Seoul"))
                }
                expectRejected(.outOfRange, "recordedAt \(label)") {
                    try store.execute(.like, book: plain,
                                      context: CommandContext(reader: reader, occurredAt: F.at("2025-03-01T10:00:00Z"), timeZone: "UTC",
                                                              recordedAt: instant))
                }
            }
            // An action recorded before it happened: occurredAt after recordedAt.
            expectRejected(.inconsistent, "occurredAt after recordedAt") {
                let late = context()
                try store.execute(.like, book: plain,
                                  context: CommandContext(reader: reader, occurredAt: late.occurredAt, timeZone: "Asia/Seoul",
                                                          recordedAt: late.occurredAt.adding(seconds: -60)))
            }
            // Goal dates in year 1 and 9999 are calendar dates, outside the years a date may fall in
            // (`Limits.years`, issue 24): refused before the order of the two is looked at.
            expectRejected(.outOfRange, "goal 9999 -> 1") {
                try store.execute(.setGoal(startDate: try LocalDate(year: 9999, month: 12, day: 31),
                                           targetDate: try LocalDate(year: 1, month: 1, day: 1), theme: nil), book: plain, context: context())
            }
            #expect(covered == Set(ValidationRule.allCases), "rules never triggered: \(Set(ValidationRule.allCases).subtracting(covered))")
            #expect(try store.log.lastPosition() == lastBefore)
            #expect(try store.viewDigest() == digestBefore)
            #expect(try snapshot(of: url) == before, "a rejected command changed the store's files")
            Reliability.report("bad-input facade", "\(ValidationRule.allCases.count) rules each triggered, files byte-identical")
        }
    }
}

