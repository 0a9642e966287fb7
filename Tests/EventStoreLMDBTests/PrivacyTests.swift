import Foundation
import TestSupport
import Projections
import ReadingEvents
import Testing
@testable import EventStoreLMDB

#if canImport(Glibc)
import Glibc
#endif

/// Privacy: file modes, and queries that never cross readers.
@Suite struct PrivacyTests {
    typealias F = Facade

    @Test func storeFilesAre0600AndTheDirectory0700EvenUnderAPermissiveUmask() throws {
        try withTempDirectory { dir in
            let old = umask(0)
            defer { umask(old) }
            let url = dir.child("store")
            do { _ = try ReadingStore.open(at: url) }
            #expect(try permissions(of: url) == 0o700)
            #expect(try permissions(of: url.appendingPathComponent("data.mdb")) == 0o600)
            #expect(try permissions(of: url.appendingPathComponent("lock.mdb")) == 0o600)
        }
    }

    @Test func everyQueryOfOneReaderHoldsNothingOfAnotherWithTheSameBookIDs() throws {
        try withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("store"))
            let alice = ReaderID(), bob = ReaderID()
            let shared = [BookID(), BookID(), BookID()]
            var minute = 0
            func run(_ reader: ReaderID, _ command: BookCommand, _ book: BookID) throws {
                minute += 7
                try store.execute(command, book: book, context: CommandContext(
                    reader: reader, occurredAt: Timestamp(microseconds: 1_740_000_000_000_000 + Int64(minute) * 60_000_000), timeZone: "Asia/Seoul"))
            }
            for (reader, name, pages) in [(alice, "alice", 100), (bob, "bob", 200)] {
                for (index, book) in shared.enumerated() {
                    try run(reader, .addBook(BookMetadata(title: "\(name) book \(index)", pageCount: pages), status: .reading), book)
                    try run(reader, .recordPages(position: pages / 2 + index), book)
                    try run(reader, .collectSentence(SentenceID(), text: "\(name) sentence", page: 1), book)
                    try run(reader, .writeMemo(MemoID(), text: "\(name) memo", page: nil), book)
                }
                try run(reader, .recordPages(position: pages), shared[0])
                try run(reader, .finishBook(on: F.day("2025-02-25")), shared[0])
                try run(reader, .like, shared[0])
                try store.execute(.updateProfile(nickname: name, imageFileName: nil, theme: nil),
                                  context: CommandContext(reader: reader, occurredAt: F.at("2025-02-25T10:00:00Z"), timeZone: "UTC"))
            }
            let days = F.day("2025-01-01")...F.day("2025-12-31")
            let asOf = F.at("2025-03-01T00:00:00Z")
            for (reader, name, other) in [(alice, "alice", "bob"), (bob, "bob", "alice")] {
                var texts: [String] = []
                try store.withViews { views in
                    let home = try views.homeList(reader: reader, asOf: asOf, zone: .utc)
                    #expect(home.items.allSatisfy { item in shared.contains(item.book) })
                    texts += home.items.map(\.metadata.title)
                    for filter in ShelfFilter.allCases {
                        let shelf = try views.bookshelf(reader: reader, showing: filter)
                        texts += shelf.items.map { "\($0)" }
                    }
                    let books = try views.bookViews(reader: reader)
                    #expect(books.count == 3 && books.allSatisfy { $0.reader == reader })
                    for book in shared {
                        let detail = try #require(try views.bookDetail(reader: reader, book: book))
                        #expect(detail.view.reader == reader)
                        texts += [detail.view.metadata.title] + detail.view.sentences.map(\.text) + detail.view.memos.map(\.text)
                        let perBook = try views.dailyPages(reader: reader, book: book, in: days)
                        #expect(perBook.reduce(0) { $0 + $1.total.pages } == detail.view.position)
                    }
                    let total = try views.dailyPages(reader: reader, in: days).reduce(0) { $0 + $1.total.pages }
                    #expect(total == books.reduce(0) { $0 + $1.position })
                    #expect(try views.readerView(reader: reader)?.nickname == name)
                    #expect(try views.summary(reader: reader).totalPages == total)
                }
                let trail = try store.auditTrail(reader: reader)
                #expect(trail.allSatisfy { $0.reader == reader })
                for book in shared { #expect(try store.auditTrail(reader: reader, book: book).allSatisfy { $0.reader == reader }) }
                #expect(try store.latestEvent(of: reader)?.reader == reader)
                #expect(try store.eventCount(of: reader) == trail.count)
                #expect(texts.allSatisfy { !$0.contains(other) }, "\(name)'s queries show \(other)'s data: \(texts.filter { $0.contains(other) })")
                #expect(texts.contains { $0.contains(name) })
            }
        }
    }
}
