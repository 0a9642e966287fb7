import Testing
import ReadingEvents
@testable import Projections

/// Issue 16, case 1: a goal on a book marked did-not-finish is not active. It leaves the home list
/// (and its index), comes back when the reader resumes the book, and the shelf and the book detail
/// say it was abandoned: neither met nor missed.
@Suite("Abandoned goals")
struct AbandonedGoalTests {
    let abandoned = BookID(), kept = BookID()

    /// The demo's case in Seoul: 82년생 김지영 (192 pages, goal 04-08 → 05-03) read to p.179 on
    /// 04-09 and marked did-not-finish on 04-10; 불편한 편의점 (268 pages, goal → 06-03) at p.56.
    func history() throws -> History {
        var h = History(zone: "Asia/Seoul")
        try h.run(.addBook(aladinMetadata(title: "82년생 김지영", pageCount: 192), status: .reading), book: abandoned,
                  at: "2025-04-08T09:00:00+09:00")
        try h.run(.setGoal(startDate: date("2025-04-08"), targetDate: date("2025-05-03"), theme: nil), book: abandoned,
                  at: "2025-04-08T09:01:00+09:00")
        try h.run(.addBook(aladinMetadata(title: "불편한 편의점", pageCount: 268), status: .reading), book: kept,
                  at: "2025-04-08T09:02:00+09:00")
        try h.run(.setGoal(startDate: date("2025-04-08"), targetDate: date("2025-06-03"), theme: nil), book: kept,
                  at: "2025-04-08T09:03:00+09:00")
        try h.run(.recordPages(position: 179), book: abandoned, at: "2025-04-09T21:00:00+09:00")
        try h.run(.recordPages(position: 56), book: kept, at: "2025-04-09T22:00:00+09:00")
        try h.run(.like, book: abandoned, at: "2025-04-09T22:05:00+09:00")
        try h.run(.setStatus(.didNotFinish), book: abandoned, at: "2025-04-10T23:58:00+09:00")
        return h
    }

    @Test func anAbandonedBookLeavesTheHomeListAndComesBackWhenResumed() throws {
        let h = try history()
        let store = try h.fold()
        let r = h.reader

        // As of 04-30 only 불편한 편의점 is an active goal; 82년생 김지영 was abandoned on 04-10.
        let home = try store.homeList(reader: r, asOf: instant("2025-04-30T12:00:00+09:00"), zone: zone("Asia/Seoul"))
        #expect(home.items.map(\.metadata.title) == ["불편한 편의점"])
        // The goals index the home list reads holds only the active goal, so a rebuild and the
        // incremental fold agree on it.
        #expect(try store.goalBooks(reader: r) == [kept])
        #expect(try store.summary(reader: r).didNotFinish == 1)
        // The shelf (it is liked) and the book detail say the goal was abandoned: neither met nor missed.
        let liked = try store.bookshelf(reader: r, showing: .liked)
        #expect(liked.items.map(\.goalStatus) == [.abandoned])
        #expect(liked.items.first?.goalMet == nil)
        #expect(try store.bookDetail(reader: r, book: abandoned)?.goalStatus == .abandoned)
        #expect(try store.bookDetail(reader: r, book: kept)?.goalStatus == .active)

        // Resumed on 05-01 (status reading again): back on the home list with its goal.
        // Pages left 192 - 179 = 13; days left 05-01 → 05-03 = 2; needed ⌈13 / 3⌉ = 5 a day.
        var resumed = h
        try resumed.run(.setStatus(.reading), book: abandoned, at: "2025-05-01T08:00:00+09:00")
        let back = try resumed.fold()
        let again = try back.homeList(reader: r, asOf: instant("2025-05-01T12:00:00+09:00"), zone: zone("Asia/Seoul"))
        #expect(again.items.map(\.metadata.title) == ["82년생 김지영", "불편한 편의점"])
        let item = try #require(again.items.first)
        #expect(item.position == 179 && item.pagesLeft == 13 && item.daysLeft == 2 && item.pagesPerDayNeeded == 5)
        #expect(Set(try back.goalBooks(reader: r)) == [abandoned, kept])
        #expect(try back.bookDetail(reader: r, book: abandoned)?.goalStatus == .active)

        // Recording pages also resumes the book (the page record makes its status reading).
        var read = h
        try read.run(.recordPages(position: 185), book: abandoned, at: "2025-05-01T08:00:00+09:00")
        let readStore = try read.fold()
        let afterPages = try readStore.homeList(reader: r, asOf: instant("2025-05-01T12:00:00+09:00"), zone: zone("Asia/Seoul"))
        #expect(afterPages.items.map(\.position) == [185, 56])

        // Finished after all, on 05-02 (target 05-03): the goal is met, and the shelf says so.
        try read.run(.recordPages(position: 192), book: abandoned, at: "2025-05-02T20:00:00+09:00")
        try read.run(.finishBook(on: date("2025-05-02")), book: abandoned, at: "2025-05-02T20:01:00+09:00")
        let finished = try read.fold().bookshelf(reader: r, showing: .finished)
        #expect(finished.items.map(\.goalStatus) == [.met])
        #expect(finished.items.map(\.goalMet) == [true])
    }
}
