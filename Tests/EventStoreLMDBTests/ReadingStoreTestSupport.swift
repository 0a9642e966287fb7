import DemoHistory
import Foundation
import Projections
import ReadingEvents
import Testing
@testable import EventStoreLMDB
import LMDB

#if canImport(Glibc)
import Glibc
#endif

/// Helpers shared by the ReadingStore (facade) tests. The generic ones (temp directories,
/// SplitMix64, snapshots, the helper executable) live in TestSupport.swift.
enum Facade {
    static let seoul = try! ZoneID("Asia/Seoul")

    /// An instant from ISO 8601 text with an offset.
    static func at(_ text: String) -> Timestamp {
        guard let value = Timestamp(iso8601: text) else { fatalError("bad timestamp \(text)") }
        return value
    }

    static func day(_ text: String) -> LocalDate { try! LocalDate(iso: text) }

    /// A context in Seoul at `text`.
    static func context(_ reader: ReaderID, _ text: String, zone: String = "Asia/Seoul",
                        commandID: EventID = EventID()) -> CommandContext {
        CommandContext(reader: reader, occurredAt: at(text), timeZone: zone, commandID: commandID)
    }

    /// The stored events folded in memory with the same projector settings as the store.
    static func inMemoryViews(of store: ReadingStore) throws -> InMemoryViewStore {
        var views = InMemoryViewStore()
        let projector = ReadingProjector(dayStartHour: store.dayStartHour)
        try projector.fold(try store.events(), into: &views)
        return views
    }

    /// Appends `history` through ``ReadingStore/appendRecorded(_:)`` in chunks; returns how many were new.
    @discardableResult
    static func appendInChunks(_ store: ReadingStore, _ history: [EventEnvelope], chunk: Int = 2_000) throws -> Int {
        var written = 0
        var index = 0
        while index < history.count {
            written += try store.appendRecorded(Array(history[index..<min(history.count, index + chunk)]))
            index += chunk
        }
        return written
    }

    /// Demo histories are generated once per process and shared (generation is not free in debug).
    private static let cache = Locked<[DemoHistory.Options: [EventEnvelope]]>([:])

    static func history(readers: Int, days: Int, seed: UInt64) -> [EventEnvelope] {
        let options = DemoHistory.Options(readers: readers, days: days, seed: seed)
        if let cached = cache.withLock({ $0[options] }) { return cached }
        let made = DemoHistory.generate(options)
        cache.withLock { $0[options] = made }
        return made
    }

    /// The options of the store used by the rebuild-crash and time-zone tests: more than two
    /// rebuild chunks (``ReadingStore/rebuildChunkSize`` is 20,000).
    static let mediumHistory = (readers: 12, days: 600, seed: UInt64(0xFACADE))

    /// Compares every query of one reader between two view stores; records an issue naming the
    /// query that differs.
    static func expectSameQueries(_ a: any ViewStore, _ b: any ViewStore, reader: ReaderID, asOf: Timestamp, zone: ZoneID,
                                  days: ClosedRange<LocalDate>, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for sort in HomeSort.allCases {
            #expect(try a.homeList(reader: reader, asOf: asOf, zone: zone, sortedBy: sort)
                    == b.homeList(reader: reader, asOf: asOf, zone: zone, sortedBy: sort), "homeList \(sort)", sourceLocation: sourceLocation)
        }
        for filter in ShelfFilter.allCases {
            #expect(try a.bookshelf(reader: reader, showing: filter) == b.bookshelf(reader: reader, showing: filter),
                    "bookshelf \(filter)", sourceLocation: sourceLocation)
        }
        #expect(try pairs(a.dailyPages(reader: reader, in: days)) == pairs(b.dailyPages(reader: reader, in: days)),
                "dailyPages", sourceLocation: sourceLocation)
        for view in try a.bookViews(reader: reader) {
            #expect(try a.bookDetail(reader: reader, book: view.book) == b.bookDetail(reader: reader, book: view.book),
                    "bookDetail \(view.metadata.title)", sourceLocation: sourceLocation)
            #expect(try pairs(a.dailyPages(reader: reader, book: view.book, in: days))
                    == pairs(b.dailyPages(reader: reader, book: view.book, in: days)), "dailyPages of a book", sourceLocation: sourceLocation)
        }
        #expect(try a.bookViews(reader: reader).map(\.book) == b.bookViews(reader: reader).map(\.book), "bookViews", sourceLocation: sourceLocation)
        #expect(try a.streaks(reader: reader, asOf: asOf, zone: zone) == b.streaks(reader: reader, asOf: asOf, zone: zone),
                "streaks", sourceLocation: sourceLocation)
        #expect(try a.streakRuns(reader: reader) == b.streakRuns(reader: reader), "streak runs", sourceLocation: sourceLocation)
        #expect(try a.summary(reader: reader) == b.summary(reader: reader), "summary", sourceLocation: sourceLocation)
        #expect(try a.timeOfDay(reader: reader) == b.timeOfDay(reader: reader), "timeOfDay", sourceLocation: sourceLocation)
        let months = YearMonth(days.lowerBound)...YearMonth(days.upperBound)
        #expect(try a.monthly(reader: reader, in: months).map { "\($0.month) \($0.total)" }
                == b.monthly(reader: reader, in: months).map { "\($0.month) \($0.total)" }, "monthly", sourceLocation: sourceLocation)
        #expect(try a.openSessions(reader: reader) == b.openSessions(reader: reader), "openSessions", sourceLocation: sourceLocation)
        #expect(try a.readerView(reader: reader) == b.readerView(reader: reader), "readerView", sourceLocation: sourceLocation)
    }

    static func pairs(_ list: [(day: LocalDate, total: DayTotal)]) -> [String] {
        list.map { "\($0.day) \($0.total.pages)p \($0.total.seconds)s" }
    }
}

/// A helper child run to its end with extra environment variables; its stdout lines and exit status.
struct FacadeChild {
    let status: Int32
    let reason: Process.TerminationReason
    let lines: [String]

    static func run(_ arguments: [String], environment extra: [String: String] = [:]) throws -> FacadeChild {
        let process = Process()
        process.executableURL = try helperExecutable()
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.standardError
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        return FacadeChild(status: process.terminationStatus, reason: process.terminationReason,
                           lines: text.split(separator: "\n").map(String.init))
    }

    /// The value of the line "`key` VALUE".
    func value(_ key: String) -> String? {
        lines.first { $0.hasPrefix(key + " ") }.map { String($0.dropFirst(key.count + 1)) }
    }
}
