import Foundation
import TestSupport
import Projections
import ReadingEvents
import Testing
@testable import EventStoreLMDB

/// The year views through the real store: kept in the write transaction, in the digest, the same
/// after a rebuild, and queryable from the facade.
@Suite("Year views in the store")
struct YearViewStoreTests {
    typealias F = Facade

    @Test func yearViewsAreInTheDigestRebuildAlikeAndQueryableFromTheFacade() throws {
        try withTempDirectory { dir in
            let store = try ReadingStore.open(at: dir.child("store"))
            let reader = ReaderID(), book = BookID()
            let metadata = BookMetadata(title: "소년이 온다", authors: "한강 (지은이)", pageCount: 216,
                                        categoryPath: "국내도서>소설/시/희곡>한국소설")
            try store.execute(.addBook(metadata, status: .reading), book: book, context: F.context(reader, "2026-01-03T09:00:00+09:00"))
            try store.execute(.recordPages(position: 216), book: book, context: F.context(reader, "2026-01-03T23:30:00+09:00"))
            try store.execute(.finishBook(on: F.day("2026-01-04")), book: book, context: F.context(reader, "2026-01-04T08:00:00+09:00"))
            try store.execute(.setChallenge(year: 2026, books: 20, pages: nil), context: F.context(reader, "2026-01-01T09:00:00+09:00"))
            // A target of 0 or -1 is rejected by name and writes nothing.
            let before = try store.log.lastPosition()
            for books in [0, -1] {
                #expect(throws: ValidationError(field: "books", rule: .outOfRange,
                                                detail: "a target of \(books) books is outside 1 ... \(Limits.challengeBooks)")) {
                    try store.execute(.setChallenge(year: 2026, books: books, pages: nil), context: F.context(reader, "2026-01-05T09:00:00+09:00"))
                }
            }
            #expect(try store.log.lastPosition() == before)

            let progress = try store.withViews { views in
                try views.challengeProgress(reader: reader, year: 2026, asOf: F.at("2026-01-10T12:00:00+09:00"), zone: F.seoul)
            }
            #expect(progress.books == ChallengePace(target: 20, done: 1, expectedByToday: 0, aheadBy: 1, projectedTotal: 37))
            let categories = try store.withViews { try $0.categoryBreakdown(reader: reader, period: .year(2026)) }
            #expect(categories.topLevel == [CategoryTotal(category: "국내도서", finishedBooks: 1, pages: 216)])
            let review = try store.withViews { try $0.yearInReview(reader: reader, year: 2026) }
            #expect(review.booksFinished == 1 && review.pages == 216 && review.fastestBook?.days == 2)

            // The persisted year records equal a fresh fold, are in the digest, and survive a rebuild.
            let fresh = try F.inMemoryViews(of: store)
            #expect(try store.withViews { try $0.yearViews(reader: reader) } == (try fresh.yearViews(reader: reader)))
            let digest = try store.viewDigest()
            #expect(digest == (try ViewDigest.of(fresh)))
            var withoutYears = fresh
            try withoutYears.putYearView(reader: reader, YearView(year: 2026))
            #expect(try ViewDigest.of(withoutYears) != digest, "the digest covers the year records")
            #expect(try store.rebuild().digest == digest)
            #expect(try store.rebuild(view: "years").digest == digest)
        }
    }

    @Test func aStoreFromBeforeTheYearViewsIsRebuiltOnceWhenOpened() throws {
        try withTempDirectory { dir in
            let url = dir.child("store")
            let history = F.history(readers: 2, days: 30, seed: 15)
            let expected: String
            do {
                let store = try ReadingStore.open(at: url)
                try F.appendInChunks(store, history)
                expected = try store.viewDigest()
                // What a store written by the previous build looks like: no views version, no year records.
                try store.log.environment.write { txn in
                    try txn.delete(store.viewMeta, "viewsVersion")
                    for generation in store.generations { try generation[.years].removeAll(txn) }
                }
                #expect(try store.viewDigest() != expected)
            }
            let reopened = try ReadingStore.open(at: url)
            #expect(try reopened.viewDigest() == expected)
            #expect(try reopened.viewDigest() == (try ViewDigest.of(F.inMemoryViews(of: reopened))))
            let reader = try #require(try reopened.readers().first)
            #expect(try reopened.withViews { try $0.yearViews(reader: reader) }.first?.challenge != nil)
        }
    }
}
