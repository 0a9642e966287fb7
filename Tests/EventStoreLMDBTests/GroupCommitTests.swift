import Foundation
import TestSupport
import Testing
import ReadingEvents
@testable import EventStoreLMDB
import LMDB

@Suite struct GroupCommitTests {
    static let metadata = BookMetadata(title: "Group", pageCount: 10_000)

    /// 16 threads, each executing commands and waiting for its own durable acknowledgement: every
    /// command lands exactly once, and under contention transactions carry several commands.
    @Test func concurrentWritersShareTransactions() throws {
        try withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("store"))
            let reader = ReaderID()
            let writers = 16, perWriter = 25
            let books = (0..<writers).map { _ in BookID() }
            let start = Timestamp(iso8601: "2026-03-01T09:00:00Z")!
            for book in books {
                try store.execute(.addBook(Self.metadata, status: .reading), book: book,
                                  context: CommandContext(reader: reader, occurredAt: start, timeZone: "UTC"))
            }
            let before = store.groupCommitCounts
            let failures = Failures()
            DispatchQueue.concurrentPerform(iterations: writers) { w in
                for i in 1...perWriter {
                    let at = start.adding(seconds: Int64(i * 60))
                    do {
                        try store.execute(.recordPages(position: i), book: books[w],
                                          context: CommandContext(reader: reader, occurredAt: at, timeZone: "UTC"))
                    } catch { failures.add("\(error)") }
                }
            }
            #expect(failures.all.isEmpty)
            let after = store.groupCommitCounts
            let commands = after.commands - before.commands
            let transactions = after.transactions - before.transactions
            #expect(commands == writers * perWriter)
            #expect(transactions <= commands)
            // Positions stay gapless and every book reached its last page.
            #expect(try store.log.lastPosition() == UInt64(writers + writers * perWriter))
            let views = try store.withViews { views in try books.map { try views.bookView(reader: reader, book: $0)!.position } }
            #expect(views == Array(repeating: perWriter, count: writers))
            #expect(try store.viewDigest() == store.freshFoldDigest())
            print("group commit: \(commands) commands in \(transactions) transactions")
        }
    }

    /// A rejected command in a group fails alone; the others of the same transaction commit.
    @Test func aRejectionFailsOnlyItsOwnCommand() throws {
        try withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("store"))
            let reader = ReaderID()
            let book = BookID()
            let at = Timestamp(iso8601: "2026-03-01T09:00:00Z")!
            try store.execute(.addBook(Self.metadata, status: .reading), book: book,
                              context: CommandContext(reader: reader, occurredAt: at, timeZone: "UTC"))
            let failures = Failures()
            DispatchQueue.concurrentPerform(iterations: 8) { i in
                // Odd writers ask for an impossible rating; even writers like and unlike.
                let context = CommandContext(reader: reader, occurredAt: at.adding(seconds: Int64(i)), timeZone: "UTC")
                do {
                    if i % 2 == 1 { try store.execute(.setRating(stars: 7), book: book, context: context) }
                    else { try store.execute(.collectSentence(SentenceID(), text: "문장 \(i)", page: nil), book: book, context: context) }
                } catch let error as ValidationError {
                    failures.add(error.field)
                } catch { failures.add("unexpected \(error)") }
            }
            #expect(failures.all.sorted() == ["rating", "rating", "rating", "rating"])
            #expect(try store.withViews { try $0.bookView(reader: reader, book: book)!.sentences.count } == 4)
        }
    }
}

/// The group commit itself, on a bare environment: typed results, and which errors fail alone.
@Suite struct GroupCommitUnitTests {
    /// `submit` hands back the work's own value; an error marked ``FailsAlone`` reaches its caller
    /// as thrown, and so does any other error (which aborts the transaction: its put is gone).
    @Test func submitReturnsTheWorksOwnTypeAndHandsBackErrors() throws {
        try withTempDirectory { dir in
            try FileManager.default.createDirectory(at: dir.child("env"), withIntermediateDirectories: true)
            let environment = try LMDBEnvironment(directory: dir.child("env"))
            let table = try environment.openDatabase(named: "t", keys: UTF8String.self, values: UTF8String.self)
            let group = GroupCommit(environment: environment)
            let pair: (count: Int, name: String) = try group.submit { txn in
                try txn.put(table, "a", "1")
                return (count: 1, name: "a")
            }
            #expect(pair.count == 1 && pair.name == "a")
            let conflict = EventStoreError.wrongExpectedVersion(stream: "s", expected: .noStream, actual: 3)
            #expect(throws: conflict) { try group.submit { _ -> Int in throw conflict } }
            let rejection = ValidationError(field: "rating", rule: .offQuarterStep, detail: "4.3 stars")
            #expect(throws: rejection) { try group.submit { _ -> Int in throw rejection } }
            let damage = EventStoreError.corruptView(detail: "test")
            #expect(throws: damage) {
                try group.submit { txn -> Int in
                    try txn.put(table, "b", "2")
                    throw damage
                }
            }
            #expect(try environment.read { txn in try txn.get(table, "b") } == nil)
            #expect(try environment.read { txn in try txn.get(table, "a") } == "1")
            #expect(group.counts.requests == 4)
        }
    }

    /// Rule violations and version conflicts fail alone; store damage and LMDB failures do not.
    @Test func onlyRejectionsAreMarkedFailsAlone() {
        func failsAlone(_ error: any Error) -> Bool { (error as? any FailsAlone)?.failsAlone ?? false }
        #expect(failsAlone(ValidationError(field: "rating", rule: .offQuarterStep, detail: "4.3 stars")))
        #expect(failsAlone(EventStoreError.wrongExpectedVersion(stream: "s", expected: .exactly(1), actual: 2)))
        #expect(!failsAlone(EventStoreError.corruptView(detail: "x")))
        #expect(!failsAlone(EventStoreError.corruptRecord(position: 1, reason: "x")))
        #expect(!failsAlone(LMDBError(operation: "mdb_put(t)", code: -30792)))
    }
}

/// Collects messages from concurrent workers.
final class Failures: @unchecked Sendable {
    // @unchecked Sendable: `items` is only touched under `lock`.
    private let lock = NSLock()
    private var items: [String] = []
    func add(_ item: String) { lock.withLock { items.append(item) } }
    var all: [String] { lock.withLock { items } }
}
